"""`python -m jaxdash`: the `jaxdash` console script (jaxdash/cli.py), e.g. `python -m jaxdash --logdir DIR`."""

from jaxdash.cli import main

if __name__ == "__main__":
    main()
