ALTER TABLE `deliveries` ADD `drift` text;--> statement-breakpoint
CREATE INDEX `deliveries_drift_idx` ON `deliveries` (`received_at`) WHERE "deliveries"."drift" is not null;