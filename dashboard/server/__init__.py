"""The HTTP side: the routes (a run's CSV, the poll, new rows; run ids looked up in run_lookup), the host
check, frame headers, URL paths, starting a server."""
