"""The run store: the run folder, the only contract between training processes and the page.

Layout, atomic writes, checks, reading (listing, status, metrics with its columnar cache), processes.
`runstore.run_folder.RunFolder` is the way in for every other package; its docstring is the contract.
Imports neither JAX, Streamlit, `training` nor `dashboard`."""
