CREATE TABLE `backfills` (
	`id` text PRIMARY KEY NOT NULL,
	`handler` text NOT NULL,
	`since` integer,
	`until` integer,
	`event_type` text,
	`rate` integer,
	`state` text NOT NULL,
	`cursor_received_at` integer,
	`cursor_event_id` text,
	`step` integer DEFAULT 0 NOT NULL,
	`total` integer DEFAULT 0 NOT NULL,
	`requeued` integer DEFAULT 0 NOT NULL,
	`skipped` integer DEFAULT 0 NOT NULL,
	`recent` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`finished_at` integer,
	`error` text,
	`lease_owner` text,
	`claim_id` text,
	`lease_until` integer
);
--> statement-breakpoint
CREATE UNIQUE INDEX `backfills_running_uq` ON `backfills` (`handler`) WHERE "backfills"."state" = 'running';--> statement-breakpoint
CREATE INDEX `backfills_created_idx` ON `backfills` (`created_at`);--> statement-breakpoint
CREATE TABLE `handler_registrations` (
	`handler` text PRIMARY KEY NOT NULL,
	`first_seen_at` integer NOT NULL,
	`last_seen_at` integer NOT NULL
);
