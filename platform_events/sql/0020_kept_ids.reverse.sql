DROP TRIGGER before_webhook_subscription_id_change ON webhook_subscriptions;
DROP TRIGGER before_api_client_id_change ON api_clients;
DROP TRIGGER before_content_type_id_change ON django_content_type;
DROP TRIGGER before_permission_id_change ON auth_permission;
DROP TRIGGER before_group_id_change ON auth_group;
DROP TRIGGER before_staff_user_id_change ON auth_user;
DROP FUNCTION trg_before_id_change();
