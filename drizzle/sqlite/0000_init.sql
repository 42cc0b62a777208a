CREATE TABLE `deliveries` (
	`event_id` text PRIMARY KEY NOT NULL,
	`event_type` text NOT NULL,
	`signature_t` integer NOT NULL,
	`content_digest` blob NOT NULL,
	`body` blob NOT NULL,
	`headers` text NOT NULL,
	`received_at` integer NOT NULL,
	`last_received_at` integer NOT NULL,
	`delivery_count` integer DEFAULT 1 NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`next_attempt_at` integer,
	`lease_owner` text,
	`lease_until` integer,
	`processed_at` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `deliveries_content_digest_uq` ON `deliveries` (`content_digest`);--> statement-breakpoint
CREATE INDEX `deliveries_due_idx` ON `deliveries` (`status`,`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `deliveries_received_idx` ON `deliveries` (`received_at`);--> statement-breakpoint
CREATE TABLE `handler_runs` (
	`event_id` text NOT NULL,
	`handler` text NOT NULL,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`event_id`, `handler`)
);
--> statement-breakpoint
CREATE TABLE `webhook_secrets` (
	`id` text PRIMARY KEY NOT NULL,
	`webhook_id` text,
	`url` text,
	`event_types` text,
	`secret` text NOT NULL,
	`fingerprint` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_secrets_fingerprint_unique` ON `webhook_secrets` (`fingerprint`);