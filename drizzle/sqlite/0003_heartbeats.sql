CREATE TABLE `heartbeats` (
	`name` text PRIMARY KEY NOT NULL,
	`beat_at` integer NOT NULL,
	`down_from` integer,
	`down_until` integer
);
