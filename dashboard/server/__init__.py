"""The HTTP side: the host check, the CSV route, URL paths, starting a server."""
