from django.urls import path

from tokens import views

urlpatterns = [
    path("activate/", views.activate_code, name="activate-code"),
    path("activate/<str:secret>", views.activate_link, name="activate-link"),
    path("recover/", views.recover_request, name="recover"),
    path("recover/<str:secret>", views.recover_link, name="recover-link"),
]
