"""Example tasks: copy one, change it, and train it with `python -m training examples/<file>.py:<Class>`."""
