DROP INDEX `deliveries_content_digest_uq`;--> statement-breakpoint
CREATE UNIQUE INDEX `deliveries_signed_content_uq` ON `deliveries` (`signature_t`,`content_digest`);