"""Mounted under /dev/mail/ by lifecycle/urls.py, with DEBUG on only."""

from django.urls import path

from lifecycle.dev_inbox import views

app_name = "dev_inbox"
urlpatterns = [
    path("", views.inbox, name="inbox"),
    path("<str:name>/", views.message, name="message"),
]
