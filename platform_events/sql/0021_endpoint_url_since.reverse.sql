-- Back to endpoints without the time their URL took its value.
DROP TRIGGER before_webhook_redelivery_url ON webhook_deliveries;
DROP FUNCTION trg_before_webhook_redelivery_url();
DROP TRIGGER before_webhook_sub_url_since ON webhook_subscriptions;
DROP FUNCTION trg_before_webhook_sub_url_since();
ALTER TABLE webhook_subscriptions DROP COLUMN url_since;
