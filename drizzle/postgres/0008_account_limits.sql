CREATE TABLE "api_keys" (
	"account" text PRIMARY KEY NOT NULL,
	"secret" text NOT NULL,
	"fingerprint" text NOT NULL,
	"created_at" bigint NOT NULL
);
--> statement-breakpoint
CREATE TABLE "rate_tokens" (
	"account" text NOT NULL,
	"bucket" text NOT NULL,
	"token" integer NOT NULL,
	"taken_at" bigint DEFAULT 0 NOT NULL,
	CONSTRAINT "rate_tokens_account_bucket_token_pk" PRIMARY KEY("account","bucket","token")
);
