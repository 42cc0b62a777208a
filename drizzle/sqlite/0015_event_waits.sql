CREATE TABLE `event_waits` (
	`event_id` text NOT NULL,
	`handler` text NOT NULL,
	`seq` integer NOT NULL,
	`name` text NOT NULL,
	`pod_id` text NOT NULL,
	`types` text NOT NULL,
	`after_at` integer NOT NULL,
	`until_at` integer NOT NULL,
	`created_at` integer NOT NULL,
	`woken_by` text,
	PRIMARY KEY(`event_id`, `handler`, `seq`)
);
--> statement-breakpoint
CREATE INDEX `event_waits_pod_idx` ON `event_waits` (`pod_id`);