CREATE TABLE "handler_steps" (
	"event_id" text NOT NULL,
	"handler" text NOT NULL,
	"seq" integer NOT NULL,
	"name" text NOT NULL,
	"kind" text NOT NULL,
	"state" text NOT NULL,
	"attempts" integer NOT NULL,
	"result" text,
	"sensitive" integer DEFAULT 0 NOT NULL,
	"result_bytes" integer,
	"error" text,
	"wake_at" bigint,
	"started_at" bigint NOT NULL,
	"finished_at" bigint,
	"duration_ms" integer,
	CONSTRAINT "handler_steps_event_id_handler_seq_pk" PRIMARY KEY("event_id","handler","seq")
);
--> statement-breakpoint
CREATE INDEX "handler_steps_sleeping_idx" ON "handler_steps" USING btree ("wake_at") WHERE "handler_steps"."state" = 'sleeping';