-- Fewer B-trees for each webhook delivery to write. Every run start with an endpoint listening
-- writes its event's body and a delivery per endpoint, and every attempt updates the delivery:
-- the index on the deliveries' updated_at moved with each update, and both it and the index on
-- the bodies' created_at served only the hourly pruning. Pruning now finds old rows by their ids,
-- which begin with their creation time (see Ids.firstOf).
DROP INDEX webhook_delivery_updated;
DROP INDEX webhook_message_created;
