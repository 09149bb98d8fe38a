"""The one training loop and its parts: position, chunks, members, schedule, sharding, PBT."""
