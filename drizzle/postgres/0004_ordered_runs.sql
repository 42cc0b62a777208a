CREATE TABLE "order_keys" (
	"handler" text NOT NULL,
	"order_key" text NOT NULL,
	"running_event_id" text,
	"newest_at" bigint,
	"newest_event_id" text,
	CONSTRAINT "order_keys_handler_order_key_pk" PRIMARY KEY("handler","order_key")
);
--> statement-breakpoint
CREATE TABLE "ordered_runs" (
	"handler" text NOT NULL,
	"order_key" text NOT NULL,
	"event_id" text NOT NULL,
	"at" bigint NOT NULL,
	"received_at" bigint NOT NULL,
	"state" text DEFAULT 'pending' NOT NULL,
	CONSTRAINT "ordered_runs_handler_order_key_event_id_pk" PRIMARY KEY("handler","order_key","event_id")
);
--> statement-breakpoint
CREATE INDEX "ordered_runs_pending_idx" ON "ordered_runs" USING btree ("handler","order_key","at") WHERE "ordered_runs"."state" = 'pending';--> statement-breakpoint
CREATE INDEX "ordered_runs_event_idx" ON "ordered_runs" USING btree ("event_id");