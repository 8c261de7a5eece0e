#!/bin/sh
# Creates the topics oncecount needs, with the settings it relies on, on an existing
# Kafka cluster (2.5 or newer). Idempotent: topics that exist are kept as they are, and
# the script then checks that their partition counts fit together.
#
#   BOOTSTRAP=kafka1:9092 INPUT_TOPIC=events PARTITIONS=12 deploy/create-topics.sh
#
# docker-compose.yml and the Kubernetes Job run this script; docs/operations.md explains
# each setting. Environment (defaults in brackets):
#   BOOTSTRAP               Kafka bootstrap servers (required)
#   INPUT_TOPIC             kafka.input_topic [events]
#   DLQ_TOPIC               kafka.dlq_topic [<INPUT_TOPIC>.dlq]
#   PARTITIONS              partitions of a new input topic [8]; an existing input topic
#                           keeps its count and the other topics follow it
#   REPLICATION_FACTOR      [3]
#   MIN_INSYNC_REPLICAS     [2; at most REPLICATION_FACTOR]
#   INPUT_RETENTION_MS      input and DLQ retention [604800000 = 7 days]
#   CHANGELOG_RETENTION_BYTES  per changelog partition [268435456 = 256 MiB]; at least
#                           4 x max(snapshot size, 1 MiB) + CHANGELOG_SEGMENT_BYTES
#   CHANGELOG_SEGMENT_BYTES [33554432 = 32 MiB]
#   KAFKA_TOPICS            the kafka-topics tool [kafka-topics.sh]
#   COMMAND_CONFIG          a client properties file for TLS/SASL clusters [none]
set -eu

: "${BOOTSTRAP:?set BOOTSTRAP to the Kafka bootstrap servers}"
INPUT_TOPIC="${INPUT_TOPIC:-events}"
DLQ_TOPIC="${DLQ_TOPIC:-$INPUT_TOPIC.dlq}"
CHANGELOG_TOPIC="$INPUT_TOPIC.changelog"
MEMBERS_TOPIC="$INPUT_TOPIC.members"
PARTITIONS="${PARTITIONS:-8}"
REPLICATION_FACTOR="${REPLICATION_FACTOR:-3}"
MIN_INSYNC_REPLICAS="${MIN_INSYNC_REPLICAS:-2}"
INPUT_RETENTION_MS="${INPUT_RETENTION_MS:-604800000}"
CHANGELOG_RETENTION_BYTES="${CHANGELOG_RETENTION_BYTES:-268435456}"
CHANGELOG_SEGMENT_BYTES="${CHANGELOG_SEGMENT_BYTES:-33554432}"
KAFKA_TOPICS="${KAFKA_TOPICS:-kafka-topics.sh}"
COMMAND_CONFIG="${COMMAND_CONFIG:-}"

# Kafka accepts a min.insync.replicas above the replication factor, and then refuses
# every acks=all write: every transaction of the service would abort.
if [ "$MIN_INSYNC_REPLICAS" -gt "$REPLICATION_FACTOR" ]; then
  echo "create-topics: MIN_INSYNC_REPLICAS ($MIN_INSYNC_REPLICAS) is above REPLICATION_FACTOR ($REPLICATION_FACTOR): every transactional write would fail (NOT_ENOUGH_REPLICAS)" >&2
  exit 2
fi

topics() {
  if [ -n "$COMMAND_CONFIG" ]; then
    "$KAFKA_TOPICS" --bootstrap-server "$BOOTSTRAP" --command-config "$COMMAND_CONFIG" "$@"
  else
    "$KAFKA_TOPICS" --bootstrap-server "$BOOTSTRAP" "$@"
  fi
}

# create NAME PARTITIONS [--config k=v]...
create() {
  name="$1"
  partitions="$2"
  shift 2
  echo "create-topics: $name ($partitions partitions, replication factor $REPLICATION_FACTOR)"
  topics --create --if-not-exists --topic "$name" --partitions "$partitions" \
    --replication-factor "$REPLICATION_FACTOR" "$@"
}

# partition_count NAME: the topic's partition count, from --describe.
partition_count() {
  topics --describe --topic "$1" | sed -n 's/.*PartitionCount:[[:space:]]*\([0-9][0-9]*\).*/\1/p' |
    head -n 1
}

# The input: written by the producers, read by the service (read_committed). Its
# retention must exceed the longest time a shard may be down or behind, or input is
# lost before it is applied (oncecount_input_lost_messages_total).
create "$INPUT_TOPIC" "$PARTITIONS" \
  --config cleanup.policy=delete \
  --config retention.ms="$INPUT_RETENTION_MS" \
  --config min.insync.replicas="$MIN_INSYNC_REPLICAS"
shards="$(partition_count "$INPUT_TOPIC")"
if [ -z "$shards" ]; then
  echo "create-topics: cannot read the partition count of $INPUT_TOPIC" >&2
  exit 1
fi

# Malformed events with their original key, value and headers plus oncecount.error
# and oncecount.source; written in the same transactions as the changelog. Any
# partition count works; a new one gets the input's.
create "$DLQ_TOPIC" "$shards" \
  --config cleanup.policy=delete \
  --config retention.ms="$INPUT_RETENTION_MS" \
  --config min.insync.replicas="$MIN_INSYNC_REPLICAS"

# The shards' state: partition p belongs to shard p, so exactly as many partitions as
# the input. Its records have no key and are read in log order (batches, claims,
# snapshots): it must not be compacted. Size-based retention keeps the newest
# snapshot and every batch after it however long a shard stays idle; a restore reads
# (and holds) what is retained, so keep it bounded.
create "$CHANGELOG_TOPIC" "$shards" \
  --config cleanup.policy=delete \
  --config retention.ms=-1 \
  --config retention.bytes="$CHANGELOG_RETENTION_BYTES" \
  --config segment.bytes="$CHANGELOG_SEGMENT_BYTES" \
  --config min.insync.replicas="$MIN_INSYNC_REPLICAS"

# Heartbeats of the instances (standbys, processing.standby_replicas > 0): one
# partition, read from its start when an instance starts; only the last seconds matter.
create "$MEMBERS_TOPIC" 1 \
  --config cleanup.policy=delete \
  --config retention.ms=3600000 \
  --config segment.ms=600000 \
  --config min.insync.replicas="$MIN_INSYNC_REPLICAS"

# Topics that existed before keep their partition counts: check they fit. (The DLQ's
# count is free: dead letters go to any of its partitions.)
status=0
n="$(partition_count "$CHANGELOG_TOPIC")"
if [ "$n" != "$shards" ]; then
  echo "create-topics: $CHANGELOG_TOPIC has ${n:-no} partitions; it needs $shards, as many as $INPUT_TOPIC" >&2
  status=1
fi
n="$(partition_count "$MEMBERS_TOPIC")"
if [ "$n" != "1" ]; then
  echo "create-topics: $MEMBERS_TOPIC has ${n:-no} partitions; it needs 1" >&2
  status=1
fi
if [ "$status" -eq 0 ]; then
  echo "create-topics: $INPUT_TOPIC and $CHANGELOG_TOPIC ($shards partitions each), $DLQ_TOPIC, and $MEMBERS_TOPIC (1 partition) are ready"
fi
exit "$status"
