from django.urls import path

from lifecycle.my_account import views

urlpatterns = [
    path("", views.home, name="account"),
    path("sign-in/", views.sign_in, name="account-sign-in"),
    path("sign-out/", views.sign_out, name="account-sign-out"),
    path("password/", views.change_password, name="account-password"),
    path("email/", views.change_email, name="account-email"),
    path("delete/", views.delete_account, name="account-delete"),
]
