from django.urls import path

from tokens import views

urlpatterns = [
    path("signup/", views.sign_up, name="sign-up"),
    path("activate/", views.activate_code, name="activate-code"),
    path("activate/<str:secret>", views.activate_link, name="activate-link"),
    path("resend/", views.resend_activation, name="resend"),
    path("recover/", views.recover_request, name="recover"),
    path("recover/code/", views.recover_code, name="recover-code"),
    path("recover/<str:secret>", views.recover_link, name="recover-link"),
    path("restore/<str:secret>", views.restore_link, name="restore-link"),
    path("delete-account/", views.delete_request, name="delete-account"),
    path("delete/<str:secret>", views.delete_link, name="delete-link"),
    path("email/<str:secret>", views.email_change_link, name="email-change-link"),
    path("email/undo/<str:secret>", views.email_undo_link, name="email-undo-link"),
]
