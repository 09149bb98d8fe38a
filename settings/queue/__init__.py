"""The run queue: at most N training processes at once, the jobs waiting in queue.db, their signatures."""
