CREATE TABLE `handler_attempts` (
	`event_id` text NOT NULL,
	`handler` text NOT NULL,
	`attempt` integer NOT NULL,
	`outcome` text NOT NULL,
	`error` text,
	`duration_ms` integer,
	`finished_at` integer NOT NULL,
	`ran_by` text NOT NULL,
	PRIMARY KEY(`event_id`, `handler`, `attempt`)
);
--> statement-breakpoint
ALTER TABLE `deliveries` ADD `ran_by` text;