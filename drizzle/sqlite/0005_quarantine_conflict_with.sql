DROP INDEX `deliveries_signed_content_uq`;--> statement-breakpoint
ALTER TABLE `deliveries` ADD `conflict_with` text;--> statement-breakpoint
CREATE UNIQUE INDEX `deliveries_signed_content_uq` ON `deliveries` (`signature_t`,`content_digest`) WHERE "deliveries"."conflict_with" is null;