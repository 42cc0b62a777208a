CREATE TABLE `order_keys` (
	`handler` text NOT NULL,
	`order_key` text NOT NULL,
	`running_event_id` text,
	`newest_at` integer,
	`newest_event_id` text,
	PRIMARY KEY(`handler`, `order_key`)
);
--> statement-breakpoint
CREATE TABLE `ordered_runs` (
	`handler` text NOT NULL,
	`order_key` text NOT NULL,
	`event_id` text NOT NULL,
	`at` integer NOT NULL,
	`received_at` integer NOT NULL,
	`state` text DEFAULT 'pending' NOT NULL,
	PRIMARY KEY(`handler`, `order_key`, `event_id`)
);
--> statement-breakpoint
CREATE INDEX `ordered_runs_pending_idx` ON `ordered_runs` (`handler`,`order_key`,`at`) WHERE "ordered_runs"."state" = 'pending';--> statement-breakpoint
CREATE INDEX `ordered_runs_event_idx` ON `ordered_runs` (`event_id`);