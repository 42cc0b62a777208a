CREATE TABLE "handler_attempts" (
	"event_id" text NOT NULL,
	"handler" text NOT NULL,
	"attempt" integer NOT NULL,
	"outcome" text NOT NULL,
	"error" text,
	"duration_ms" integer,
	"finished_at" bigint NOT NULL,
	"ran_by" text NOT NULL,
	CONSTRAINT "handler_attempts_event_id_handler_attempt_pk" PRIMARY KEY("event_id","handler","attempt")
);
--> statement-breakpoint
ALTER TABLE "deliveries" ADD COLUMN "ran_by" text;