"""``winnow eval``: a team's own labelled questions through the requests its web app sends, scored with
the metrics the project's benchmarks use, and a relevance threshold chosen for that deployment."""
