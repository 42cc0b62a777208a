CREATE TABLE `handler_steps` (
	`event_id` text NOT NULL,
	`handler` text NOT NULL,
	`seq` integer NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`state` text NOT NULL,
	`attempts` integer NOT NULL,
	`result` text,
	`sensitive` integer DEFAULT 0 NOT NULL,
	`result_bytes` integer,
	`error` text,
	`wake_at` integer,
	`started_at` integer NOT NULL,
	`finished_at` integer,
	`duration_ms` integer,
	PRIMARY KEY(`event_id`, `handler`, `seq`)
);
--> statement-breakpoint
CREATE INDEX `handler_steps_sleeping_idx` ON `handler_steps` (`wake_at`) WHERE "handler_steps"."state" = 'sleeping';