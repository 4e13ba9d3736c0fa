"""Ironclash: an example meleelab ruleset plugin (opposed d10 duels with armour that dents)."""
