"""nrsack.analyzer"""
