"""nrsack.dashboard"""
