"""The suite run by run_all.sh: its steps declared once (manifest.py) and the
driver that runs them (driver.py), their dry run and time bound (dry_run.py,
estimate.py)."""
