"""Reading runs for the pages: the list of runs, a run's cached metrics, a population's runs as a group, and
following the list as runs start, end or are deleted (Streamlit caches here; the reading itself is runstore's)."""
