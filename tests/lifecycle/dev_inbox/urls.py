"""The product's URLs with the development inbox mounted, as lifecycle/urls.py mounts it with DEBUG on
(pytest-django runs the tests with DEBUG off, and the product's URLs are read once)."""

from django.urls import include, path

from lifecycle.urls import urlpatterns as product

urlpatterns = [path("dev/mail/", include("lifecycle.dev_inbox.urls")), *product]
