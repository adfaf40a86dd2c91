"""Clusters of the system under test that perfpost sets up itself, one folder each.

A cluster folder holds the module that starts and stops it and what perfpost fetches to run
it (a :class:`perfpost.provision.Runtime`: its pom, log4j settings and launcher).
"""
