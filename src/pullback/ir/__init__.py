"""The small gast toolkit every pass uses: building nodes, naming, the normal-form grammar."""
