"""``commbench advise``: which training strategy is fastest and fits, at any scale, from
measured or stated pieces. The model, module by module: docs/advise.md.
"""
