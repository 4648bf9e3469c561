from django.urls import path

from lifecycle.my_account import views

urlpatterns = [
    path("", views.home, name="account"),
    path("sign-in/", views.sign_in, name="account-sign-in"),
    path("sign-out/", views.sign_out, name="account-sign-out"),
]
