"""What the tests share: media and speech they make, servers standing in for the network,
the process table, the queue's invariants."""
