"""The benches' preamble: importing this module sets Django up with the product's settings, DEBUG on
unless the bench's environment says otherwise (a bench that needs other settings puts them in
``os.environ`` before importing it)."""

import os

import django

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "lifecycle.settings")
os.environ.setdefault("DEBUG", "true")
django.setup()
