"""The sweep runner: cells × runs, backends, run files, reports and paired statistics."""
