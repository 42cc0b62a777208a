CREATE TABLE "event_waits" (
	"event_id" text NOT NULL,
	"handler" text NOT NULL,
	"seq" integer NOT NULL,
	"name" text NOT NULL,
	"pod_id" text NOT NULL,
	"types" text NOT NULL,
	"after_at" bigint NOT NULL,
	"until_at" bigint NOT NULL,
	"created_at" bigint NOT NULL,
	"woken_by" text,
	CONSTRAINT "event_waits_event_id_handler_seq_pk" PRIMARY KEY("event_id","handler","seq")
);
--> statement-breakpoint
CREATE INDEX "event_waits_pod_idx" ON "event_waits" USING btree ("pod_id");