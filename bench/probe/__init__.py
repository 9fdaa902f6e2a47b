"""The link probe: latency and bandwidth between every pair of ranks, in rounds of disjoint
pairs, grouped by link class, with the node x node matrix and the slow links and nodes named.

``schedule`` pairs the ranks (round-robin tournament), ``measure`` times one pair (the probe's
clock), ``job`` runs the rounds inside an MPI job, ``record`` turns samples into records,
``outliers`` and ``matrix`` read records back; ``confirm`` picks the tournament's suspects and
their reference pairs, ``confirm_job`` (with ``pin``) measures them again one pair at a time,
``verdict`` re-judges them and ``findings``/``summary`` put both passes together; ``fit`` turns
records into a cost-model profile,
``scenario`` and ``launch`` are ``commbench probe`` and ``kind: probe``. See docs/probe.md.
"""
