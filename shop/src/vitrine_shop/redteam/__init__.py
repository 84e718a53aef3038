"""The shop assistant as a red-team target: its profile, static cases, a deliberately
vulnerable calibration model and the Eval 06 safety plan."""
