CREATE TABLE `listen_cursors` (
	`remote` text PRIMARY KEY NOT NULL,
	`cursor` text,
	`since` integer NOT NULL,
	`updated_at` integer NOT NULL
);
