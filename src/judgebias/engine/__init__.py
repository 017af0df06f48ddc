"""The run loop: every item judged twice per judge, replies cached as they arrive, progress shown."""
