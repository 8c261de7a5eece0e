#include "processor/kafka/rdkafka_clients.h"

#include <librdkafka/rdkafka.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>
#include <string_view>
#include <vector>

namespace oncecount::kafka {
namespace {

struct ListDeleter {
  void operator()(rd_kafka_topic_partition_list_t* l) const {
    rd_kafka_topic_partition_list_destroy(l);
  }
};
using PartitionList = std::unique_ptr<rd_kafka_topic_partition_list_t, ListDeleter>;

struct ErrorDeleter {
  void operator()(rd_kafka_error_t* e) const { rd_kafka_error_destroy(e); }
};
using ErrorPtr = std::unique_ptr<rd_kafka_error_t, ErrorDeleter>;

KafkaError Failed(rd_kafka_resp_err_t e, const std::string& what) {
  if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
  return {ErrorKind::kFailed, rd_kafka_err2name(e), what + ": " + rd_kafka_err2str(e)};
}

KafkaError Failed(rd_kafka_error_t* owned, const std::string& what) {
  ErrorPtr e(owned);
  if (!e) return {};
  return {ErrorKind::kFailed, rd_kafka_error_name(e.get()),
          what + ": " + rd_kafka_error_string(e.get())};
}

// One of a partition's ends, asked of its leader: `which` is RD_KAFKA_OFFSET_BEGINNING
// (the log start) or RD_KAFKA_OFFSET_END (the end in the handle's isolation.level: the
// last stable offset for a read_committed handle, the high watermark otherwise). A
// ListOffsets through offsets_for_times, which stops waiting at `timeout`:
// rd_kafka_query_watermark_offsets bounds only its leader lookup, and waits for the
// answers up to socket.timeout.ms (60 s) from a broker that takes the request and
// never answers, blocking the caller's loop that long.
KafkaError ListOffset(rd_kafka_t* rk, const std::string& topic, base::Partition partition,
                      int64_t which, std::chrono::milliseconds timeout, const std::string& what,
                      base::Offset& out) {
  PartitionList list(rd_kafka_topic_partition_list_new(1));
  rd_kafka_topic_partition_t* asked =
      rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), partition.value());
  asked->offset = which;
  if (KafkaError e = Failed(
          rd_kafka_offsets_for_times(rk, list.get(), static_cast<int>(timeout.count())), what)) {
    return e;
  }
  if (KafkaError e = Failed(asked->err, what)) return e;
  // offsets_for_times updates only the partitions the answer names: one it left out
  // keeps the logical offset asked, which is no answer.
  if (asked->offset < 0) {
    return {ErrorKind::kFailed, rd_kafka_err2name(RD_KAFKA_RESP_ERR__BAD_MSG),
            what + ": the answer did not name the partition"};
  }
  out = base::Offset(asked->offset);
  return {};
}

// Asks for the settings of one resource (a topic, a broker); the answer comes on
// `answers` as an event whose opaque is `opaque`.
void AskDescribeConfigs(rd_kafka_t* rk, rd_kafka_ResourceType_t type, const std::string& name,
                        std::chrono::milliseconds timeout, void* opaque,
                        rd_kafka_queue_t* answers) {
  rd_kafka_ConfigResource_t* resource = rd_kafka_ConfigResource_new(type, name.c_str());
  rd_kafka_AdminOptions_t* options =
      rd_kafka_AdminOptions_new(rk, RD_KAFKA_ADMIN_OP_DESCRIBECONFIGS);
  char error[256];
  rd_kafka_AdminOptions_set_request_timeout(options, static_cast<int>(timeout.count()), error,
                                            sizeof error);
  rd_kafka_AdminOptions_set_opaque(options, opaque);
  rd_kafka_DescribeConfigs(rk, &resource, 1, options, answers);
  rd_kafka_AdminOptions_destroy(options);
  rd_kafka_ConfigResource_destroy(resource);
}

// Calls `visit(name, value)` for each setting of a described resource that has a
// value (a sensitive one has none).
template <class Visit>
void ForEachConfigEntry(const rd_kafka_ConfigResource_t* resource, Visit visit) {
  size_t entries = 0;
  const rd_kafka_ConfigEntry_t** config = rd_kafka_ConfigResource_configs(resource, &entries);
  for (size_t j = 0; j < entries; ++j) {
    const char* value = rd_kafka_ConfigEntry_value(config[j]);
    if (value != nullptr) visit(std::string_view(rd_kafka_ConfigEntry_name(config[j])), value);
  }
}

KafkaError Txn(rd_kafka_error_t* owned, const std::string& what) {
  ErrorPtr e(owned);
  if (!e) return {};
  KafkaError classified = ClassifyTxnError(e.get());
  classified.message = what + ": " + classified.message;
  return classified;
}

// --- Messages --------------------------------------------------------------------

void ReleaseMessage(void* handle) {
  rd_kafka_message_destroy(static_cast<rd_kafka_message_t*>(handle));
}

std::vector<Header> MessageHeaders(const void* handle) {
  std::vector<Header> out;
  rd_kafka_headers_t* headers = nullptr;
  const auto* m = static_cast<const rd_kafka_message_t*>(handle);
  if (rd_kafka_message_headers(m, &headers) != RD_KAFKA_RESP_ERR_NO_ERROR) return out;
  const char* name = nullptr;
  const void* value = nullptr;
  size_t size = 0;
  for (size_t i = 0;
       rd_kafka_header_get_all(headers, i, &name, &value, &size) == RD_KAFKA_RESP_ERR_NO_ERROR;
       ++i) {
    Header h{name, std::nullopt};
    if (value != nullptr) h.value.emplace(static_cast<const char*>(value), size);
    out.push_back(std::move(h));
  }
  return out;
}

constexpr Message::Ops kMessageOps{&ReleaseMessage, &MessageHeaders};

Message Wrap(rd_kafka_message_t* m) {
  Message out(m, &kMessageOps);
  out.partition = base::Partition(m->partition);
  out.offset = base::Offset(m->offset);
  if (m->rkt != nullptr) out.topic = rd_kafka_topic_name(m->rkt);
  switch (m->err) {
    case RD_KAFKA_RESP_ERR_NO_ERROR:
      out.kind = MessageKind::kRecord;
      break;
    case RD_KAFKA_RESP_ERR__PARTITION_EOF:
      out.kind = MessageKind::kPartitionEnd;
      return out;
    case RD_KAFKA_RESP_ERR__AUTO_OFFSET_RESET:
      out.kind = MessageKind::kOffsetOutOfRange;
      out.error = rd_kafka_message_errstr(m);
      return out;
    case RD_KAFKA_RESP_ERR__FATAL:
      out.kind = MessageKind::kFatal;
      out.error = rd_kafka_message_errstr(m);
      return out;
    // librdkafka reports these for a record or batch it cannot read: it then either
    // goes on past it or fetches it again (the processor tells which by what comes
    // next, OnInputUnreadable).
    case RD_KAFKA_RESP_ERR__BAD_MSG:
    case RD_KAFKA_RESP_ERR__BAD_COMPRESSION:
    case RD_KAFKA_RESP_ERR__NOT_IMPLEMENTED:
      out.kind = m->rkt != nullptr && m->partition >= 0 && m->offset >= 0 ? MessageKind::kUnreadable
                                                                          : MessageKind::kError;
      out.error = rd_kafka_err2name(m->err) + std::string(": ") + rd_kafka_message_errstr(m);
      return out;
    default:
      // The error's name first (TOPIC_AUTHORIZATION_FAILED, _TRANSPORT...): the text
      // alone does not always say which it is.
      out.kind = MessageKind::kError;
      out.error = rd_kafka_err2name(m->err) + std::string(": ") + rd_kafka_message_errstr(m);
      if (m->rkt != nullptr && m->partition >= 0) {
        out.error += " (" + std::string(rd_kafka_topic_name(m->rkt)) + "/" +
                     std::to_string(m->partition) + ")";
      }
      return out;
  }
  rd_kafka_timestamp_type_t type = RD_KAFKA_TIMESTAMP_NOT_AVAILABLE;
  out.timestamp_ms = rd_kafka_message_timestamp(m, &type);
  if (m->key != nullptr) out.key = std::string_view(static_cast<const char*>(m->key), m->key_len);
  if (m->payload != nullptr) {
    out.value = std::string_view(static_cast<const char*>(m->payload), m->len);
  }
  return out;
}

std::optional<Message> PollConsumer(rd_kafka_t* rk, std::chrono::milliseconds timeout) {
  rd_kafka_message_t* m = rd_kafka_consumer_poll(rk, static_cast<int>(timeout.count()));
  if (m == nullptr) return std::nullopt;
  return Wrap(m);
}

PartitionList ListOf(const std::string& topic, const std::vector<PartitionOffset>& parts) {
  PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(parts.size())));
  for (const PartitionOffset& p : parts) {
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p.partition.value())->offset =
        p.offset.value();
  }
  return list;
}

PartitionList ListOf(const std::string& topic, const std::vector<base::Partition>& parts) {
  PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(parts.size())));
  for (base::Partition p : parts)
    rd_kafka_topic_partition_list_add(list.get(), topic.c_str(), p.value());
  return list;
}

KafkaError PartitionErrors(const rd_kafka_topic_partition_list_t* list, const std::string& what) {
  for (int i = 0; i < list->cnt; ++i) {
    if (list->elems[i].err) {
      return Failed(list->elems[i].err, what + " " + list->elems[i].topic + "/" +
                                            std::to_string(list->elems[i].partition));
    }
  }
  return {};
}

rd_kafka_headers_t* MakeHeaders(const std::vector<Header>& headers) {
  if (headers.empty()) return nullptr;
  rd_kafka_headers_t* out = rd_kafka_headers_new(headers.size());
  for (const Header& h : headers) {
    rd_kafka_header_add(out, h.name.data(), static_cast<ssize_t>(h.name.size()),
                        h.value ? h.value->data() : nullptr,
                        h.value ? static_cast<ssize_t>(h.value->size()) : 0);
  }
  return out;
}

// Produces a copy of `r` in one attempt; RD_KAFKA_RESP_ERR__QUEUE_FULL while the local
// queue is full.
rd_kafka_resp_err_t TryProduceCopy(rd_kafka_t* rk, const OutgoingRecord& r) {
  const std::string topic(r.topic);
  const void* key = r.key ? r.key->data() : nullptr;
  const size_t key_size = r.key ? r.key->size() : 0;
  void* value = r.value ? const_cast<char*>(r.value->data()) : nullptr;
  const size_t value_size = r.value ? r.value->size() : 0;
  rd_kafka_headers_t* headers = MakeHeaders(r.headers);
  const rd_kafka_resp_err_t e = rd_kafka_producev(
      rk, RD_KAFKA_V_TOPIC(topic.c_str()), RD_KAFKA_V_PARTITION(r.partition.value()),
      RD_KAFKA_V_KEY(key, key_size), RD_KAFKA_V_VALUE(value, value_size),
      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_HEADERS(headers), RD_KAFKA_V_END);
  // The producer owns the headers only once the call succeeded.
  if (e != RD_KAFKA_RESP_ERR_NO_ERROR && headers != nullptr) rd_kafka_headers_destroy(headers);
  return e;
}

// Waits while the local queue is full (a transaction's records must all go in).
rd_kafka_resp_err_t ProduceCopy(rd_kafka_t* rk, const OutgoingRecord& r) {
  while (true) {
    const rd_kafka_resp_err_t e = TryProduceCopy(rk, r);
    if (e != RD_KAFKA_RESP_ERR__QUEUE_FULL) return e;
    rd_kafka_poll(rk, 10);
  }
}

// librdkafka's levels are syslog's: 0-3 errors, 4 warnings, 5-6 notices and
// information, 7 debugging (only with its `debug` property).
base::LogLevel LevelOf(int syslog_level) {
  if (syslog_level <= 3) return base::LogLevel::kError;
  if (syslog_level == 4) return base::LogLevel::kWarn;
  if (syslog_level <= 6) return base::LogLevel::kInfo;
  return base::LogLevel::kDebug;
}

// What every handle's opaque points at, so that librdkafka's callbacks on a handle
// find their object: its log lines (from librdkafka's threads, from rd_kafka_new
// on), and the rebalance and delivery callbacks of its kind (inside the owner's
// calls). An owner makes its handle (MakeHandle) and destroys it before it goes.
class HandleOwner {
 public:
  explicit HandleOwner(std::shared_ptr<const ClientLog> log) : log_(std::move(log)) {}
  virtual ~HandleOwner() = default;
  HandleOwner(const HandleOwner&) = delete;
  HandleOwner& operator=(const HandleOwner&) = delete;

  // The owner of the handle a callback's opaque belongs to.
  template <class Owner>
  static Owner& Of(void* opaque) {
    return static_cast<Owner&>(*static_cast<HandleOwner*>(opaque));
  }

  base::Result<rd_kafka_t*> MakeHandle(rd_kafka_type_t type, base::Result<rd_kafka_conf_s*> made,
                                       const std::string& what) {
    if (!made) return std::move(made).error();
    rd_kafka_conf_t* conf = made.value();
    what_ = what;  // before rd_kafka_new starts the threads that read it
    rd_kafka_conf_set_opaque(conf, this);
    if (log_->log) rd_kafka_conf_set_log_cb(conf, &HandleOwner::OnLog);
    char error[512];
    rd_kafka_t* rk = rd_kafka_new(type, conf, error, sizeof error);
    if (rk == nullptr) {
      rd_kafka_conf_destroy(conf);
      return base::KafkaFailure("cannot create the " + what + ": " + error);
    }
    return rk;
  }

 private:
  // librdkafka's threads call this (a log callback may call no librdkafka function
  // but rd_kafka_opaque, a read of the handle's configuration).
  static void OnLog(const rd_kafka_t* rk, int level, const char* facility, const char* line) {
    const auto& self = *static_cast<const HandleOwner*>(rd_kafka_opaque(rk));
    const ClientLog& log = *self.log_;
    base::LogLevel as = LevelOf(level);
    // kafka.properties goes to every client, and each warns, when it is made, of the
    // properties of another kind of client that it ignores (session.timeout.ms on a
    // producer): expected, not a problem.
    const std::string_view says(line);
    if (std::string_view(facility) == "CONFWARN" &&
        says.find("will be ignored by this") != std::string_view::npos) {
      as = base::LogLevel::kInfo;
    }
    // A cluster that answers only an old Metadata version (the embedded cluster does)
    // cannot be asked not to create topics. A broker that old has no transactions,
    // which the service needs anyway: nothing an operator could act on.
    if (std::string_view(facility) == "AUTOCREATE" &&
        says.find("not supported by broker") != std::string_view::npos) {
      as = base::LogLevel::kInfo;
    }
    if (as >= base::LogLevel::kWarn && log.warnings != nullptr) log.warnings->Add();
    log.log.Log(as, self.what_ + " " + facility + ": " + line);
  }

  std::shared_ptr<const ClientLog> log_;
  std::string what_;  // "consumer", "reader changelog-3"...: names the handle's lines
};

// --- The group consumer ------------------------------------------------------------

class RdGroupConsumer final : public GroupConsumer, public HandleOwner {
 public:
  RdGroupConsumer(std::shared_ptr<const ClientLog> log, std::string topic, bool leave_before_close)
      : HandleOwner(std::move(log)),
        topic_(std::move(topic)),
        leave_before_close_(leave_before_close) {}
  ~RdGroupConsumer() override {
    if (rk_ != nullptr) rd_kafka_destroy(rk_);
  }
  RdGroupConsumer(const RdGroupConsumer&) = delete;
  RdGroupConsumer& operator=(const RdGroupConsumer&) = delete;
  void set_handle(rd_kafka_t* rk) { rk_ = rk; }

  // The rebalance callback's opaque must point at this object before Subscribe.
  static void OnRebalance(rd_kafka_t*, rd_kafka_resp_err_t err,
                          rd_kafka_topic_partition_list_t* parts, void* opaque) {
    auto* self = &Of<RdGroupConsumer>(opaque);
    std::vector<base::Partition> partitions;
    for (int i = 0; i < parts->cnt; ++i)
      partitions.push_back(base::Partition(parts->elems[i].partition));
    if (self->listener_ == nullptr) return;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
      self->listener_->OnAssigned(partitions);
    } else {
      self->listener_->OnRevoked(partitions, rd_kafka_assignment_lost(self->rk_) != 0);
    }
  }

  KafkaError Subscribe(RebalanceListener* listener) override {
    listener_ = listener;
    PartitionList topics(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(topics.get(), topic_.c_str(), RD_KAFKA_PARTITION_UA);
    return Failed(rd_kafka_subscribe(rk_, topics.get()), "cannot subscribe to " + topic_);
  }
  std::optional<Message> Poll(std::chrono::milliseconds timeout) override {
    return PollConsumer(rk_, timeout);
  }
  KafkaError IncrementalAssign(const std::vector<PartitionOffset>& partitions) override {
    return Failed(rd_kafka_incremental_assign(rk_, ListOf(topic_, partitions).get()),
                  "incremental_assign");
  }
  KafkaError IncrementalUnassign(const std::vector<base::Partition>& partitions) override {
    return Failed(rd_kafka_incremental_unassign(rk_, ListOf(topic_, partitions).get()),
                  "incremental_unassign");
  }
  KafkaError Seek(const std::vector<PartitionOffset>& positions) override {
    PartitionList list = ListOf(topic_, positions);
    if (KafkaError e = Failed(rd_kafka_seek_partitions(rk_, list.get(), 10000), "seek")) return e;
    return PartitionErrors(list.get(), "cannot seek");
  }
  KafkaError Pause(const std::vector<base::Partition>& partitions) override {
    PartitionList list = ListOf(topic_, partitions);
    if (KafkaError e = Failed(rd_kafka_pause_partitions(rk_, list.get()), "pause")) return e;
    return PartitionErrors(list.get(), "cannot pause");
  }
  KafkaError Resume(const std::vector<base::Partition>& partitions) override {
    PartitionList list = ListOf(topic_, partitions);
    if (KafkaError e = Failed(rd_kafka_resume_partitions(rk_, list.get()), "resume")) return e;
    return PartitionErrors(list.get(), "cannot resume");
  }
  bool AssignmentLost() override { return rd_kafka_assignment_lost(rk_) != 0; }
  std::unique_ptr<GroupMetadata> Metadata() override {
    return std::make_unique<RdGroupMetadata>(rd_kafka_consumer_group_metadata(rk_));
  }
  base::Offset CachedHighWatermark(base::Partition partition) override {
    int64_t low = 0, high = -1;
    if (rd_kafka_get_watermark_offsets(rk_, topic_.c_str(), partition.value(), &low, &high) !=
        RD_KAFKA_RESP_ERR_NO_ERROR) {
      return base::Offset(-1);
    }
    return base::Offset(high);
  }
  KafkaError QueryWatermarks(base::Partition partition, base::Offset& low, base::Offset& high,
                             std::chrono::milliseconds timeout) override {
    // Two questions (a ListOffsets may not name a partition twice), within `timeout`
    // together.
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    const std::string what =
        "cannot read the watermarks of " + topic_ + "/" + std::to_string(partition.value());
    if (KafkaError e =
            ListOffset(rk_, topic_, partition, RD_KAFKA_OFFSET_BEGINNING, timeout, what, low)) {
      return e;
    }
    const auto left = std::max(std::chrono::milliseconds(1),
                               std::chrono::duration_cast<std::chrono::milliseconds>(
                                   deadline - std::chrono::steady_clock::now()));
    return ListOffset(rk_, topic_, partition, RD_KAFKA_OFFSET_END, left, what, high);
  }
  // Asked through this handle, the answer also refreshes the metadata its QueryEnd
  // finds leaders in: the two agree on who leads.
  base::Result<std::map<base::Partition, int32_t>> PartitionLeaders(
      std::chrono::milliseconds timeout) override {
    std::unique_ptr<rd_kafka_topic_t, void (*)(rd_kafka_topic_t*)> handle(
        rd_kafka_topic_new(rk_, topic_.c_str(), nullptr), rd_kafka_topic_destroy);
    const rd_kafka_metadata_t* md = nullptr;
    if (const rd_kafka_resp_err_t e =
            rd_kafka_metadata(rk_, 0, handle.get(), &md, static_cast<int>(timeout.count()))) {
      return base::KafkaFailure("cannot read the metadata of " + topic_ + ": " +
                                rd_kafka_err2str(e));
    }
    std::unique_ptr<const rd_kafka_metadata_t, void (*)(const rd_kafka_metadata_t*)> owned(
        md, rd_kafka_metadata_destroy);
    for (int i = 0; i < md->topic_cnt; ++i) {
      const rd_kafka_metadata_topic_t& t = md->topics[i];
      if (t.topic == nullptr || topic_ != t.topic) continue;
      if (t.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return base::KafkaFailure("cannot read the metadata of " + topic_ + ": " +
                                  rd_kafka_err2str(t.err));
      }
      std::map<base::Partition, int32_t> leaders;
      for (int j = 0; j < t.partition_cnt; ++j) {
        leaders[base::Partition(t.partitions[j].id)] = t.partitions[j].leader;
      }
      return leaders;
    }
    return base::KafkaFailure("the metadata of " + topic_ + " does not hold it");
  }
  KafkaError QueryEnd(base::Partition partition, base::Offset& end,
                      std::chrono::milliseconds timeout) override {
    // The latest offset in the consumer's isolation level (read_committed).
    return ListOffset(rk_, topic_, partition, RD_KAFKA_OFFSET_END, timeout,
                      "cannot read the end of " + topic_ + "/" + std::to_string(partition.value()),
                      end);
  }
  KafkaError CommittedOffset(base::Partition partition, std::optional<base::Offset>& committed,
                             std::chrono::milliseconds timeout) override {
    committed.reset();
    std::unique_ptr<rd_kafka_topic_partition_list_t, void (*)(rd_kafka_topic_partition_list_t*)>
        list(rd_kafka_topic_partition_list_new(1), rd_kafka_topic_partition_list_destroy);
    rd_kafka_topic_partition_list_add(list.get(), topic_.c_str(), partition.value());
    const std::string what = "cannot read the group's committed offset of " + topic_ + "/" +
                             std::to_string(partition.value());
    if (KafkaError e =
            Failed(rd_kafka_committed(rk_, list.get(), static_cast<int>(timeout.count())), what)) {
      return e;
    }
    const rd_kafka_topic_partition_t& answer = list->elems[0];
    if (KafkaError e = Failed(answer.err, what)) return e;
    if (answer.offset >= 0) committed = base::Offset(answer.offset);
    return {};
  }
  void Close() override {
    if (leave_before_close_) LeaveBeforeClose();
    rd_kafka_consumer_close(rk_);
  }

  class RdGroupMetadata final : public GroupMetadata {
   public:
    explicit RdGroupMetadata(rd_kafka_consumer_group_metadata_t* m) : m_(m) {}
    ~RdGroupMetadata() override { rd_kafka_consumer_group_metadata_destroy(m_); }
    RdGroupMetadata(const RdGroupMetadata&) = delete;
    RdGroupMetadata& operator=(const RdGroupMetadata&) = delete;
    const rd_kafka_consumer_group_metadata_t* get() const { return m_; }

   private:
    rd_kafka_consumer_group_metadata_t* m_;
  };

 private:
  // librdkafka sends no LeaveGroup for a static member once it is closing
  // (rd_kafka_cgrp_leave_maybe skips it under RD_KAFKA_CGRP_F_TERMINATE), but it does
  // when the member unsubscribes. So a static member that is to leave unsubscribes
  // first and serves the revocation until the leave went out (the leave clears the
  // member id); the close then waits for the broker's answer. Records polled
  // meanwhile are dropped: nothing committed them, so the next owner reads them.
  void LeaveBeforeClose() {
    if (rd_kafka_unsubscribe(rk_) != RD_KAFKA_RESP_ERR_NO_ERROR) return;
    const auto deadline = std::chrono::steady_clock::now() + kLeaveTimeout;
    while (std::chrono::steady_clock::now() < deadline && HasMemberId()) {
      if (rd_kafka_message_t* m = rd_kafka_consumer_poll(rk_, 50)) rd_kafka_message_destroy(m);
    }
  }
  bool HasMemberId() const {
    char* id = rd_kafka_memberid(rk_);
    const bool has = id != nullptr && id[0] != '\0';
    if (id != nullptr) rd_kafka_mem_free(rk_, id);
    return has;
  }

  static constexpr std::chrono::seconds kLeaveTimeout{10};
  rd_kafka_t* rk_ = nullptr;
  std::string topic_;
  const bool leave_before_close_;
  RebalanceListener* listener_ = nullptr;
};

// --- The transactional producer -----------------------------------------------------

class RdTransactionalProducer final : public TransactionalProducer, public HandleOwner {
 public:
  RdTransactionalProducer(std::shared_ptr<const ClientLog> log, std::string id)
      : HandleOwner(std::move(log)), id_(std::move(id)) {}
  ~RdTransactionalProducer() override {
    for (rd_kafka_topic_t* t : known_topics_) rd_kafka_topic_destroy(t);
    if (rk_ != nullptr) rd_kafka_destroy(rk_);
  }
  void set_handle(rd_kafka_t* rk) { rk_ = rk; }

  // Delivery reports run inside Poll and commit_transaction, on the owner's thread.
  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    auto* self = &Of<RdTransactionalProducer>(opaque);
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      const base::Offset offset(m->offset);
      auto [it, first] = self->delivered_[rd_kafka_topic_name(m->rkt)].try_emplace(
          base::Partition(m->partition), DeliveredRecords{offset, offset, 1});
      if (!first) {
        it->second.first = std::min(it->second.first, offset);
        it->second.last = std::max(it->second.last, offset);
        ++it->second.count;
      }
      return;
    }
    // The failure that says why: a purge is librdkafka dropping the rest after it, and
    // a record too large is what the processor learns its limit from.
    KafkaError failure{ErrorKind::kAbortable, rd_kafka_err2name(m->err),
                       std::string("delivery to ") + rd_kafka_topic_name(m->rkt) +
                           " failed: " + rd_kafka_err2str(m->err)};
    const auto is_purge = [](const KafkaError& e) {
      return e.code == "_PURGE_QUEUE" || e.code == "_PURGE_INFLIGHT";
    };
    KafkaError& kept = self->delivery_failure_;
    if (kept.ok() || (is_purge(kept) && !is_purge(failure)) ||
        (!IsRecordTooLarge(kept) && IsRecordTooLarge(failure))) {
      kept = std::move(failure);
    }
  }

  KafkaError InitTransactions(std::chrono::milliseconds timeout) override {
    return Txn(rd_kafka_init_transactions(rk_, static_cast<int>(timeout.count())),
               "init_transactions (transactional.id " + id_ + ")");
  }
  KafkaError LookUpTopics(const std::vector<std::string>& topics,
                          std::chrono::milliseconds timeout) override {
    for (const std::string& name : topics) {
      // The handle is kept for the producer's life, and with it the topic's partitions.
      rd_kafka_topic_t* topic = rd_kafka_topic_new(rk_, name.c_str(), nullptr);
      if (topic == nullptr) {
        return {ErrorKind::kFatal, rd_kafka_err2name(rd_kafka_last_error()),
                "topic " + name + ": " + rd_kafka_err2str(rd_kafka_last_error())};
      }
      known_topics_.push_back(topic);
      const rd_kafka_metadata_t* metadata = nullptr;
      const rd_kafka_resp_err_t e =
          rd_kafka_metadata(rk_, 0, topic, &metadata, static_cast<int>(timeout.count()));
      rd_kafka_resp_err_t topic_error = RD_KAFKA_RESP_ERR_NO_ERROR;
      if (e == RD_KAFKA_RESP_ERR_NO_ERROR) {
        if (metadata->topic_cnt > 0) topic_error = metadata->topics[0].err;
        rd_kafka_metadata_destroy(metadata);
      }
      const rd_kafka_resp_err_t failed = e != RD_KAFKA_RESP_ERR_NO_ERROR ? e : topic_error;
      if (failed != RD_KAFKA_RESP_ERR_NO_ERROR) {
        return {ErrorKind::kFatal, rd_kafka_err2name(failed),
                "looking up topic " + name + " failed: " + rd_kafka_err2str(failed)};
      }
    }
    return {};
  }
  KafkaError BeginTransaction() override {
    delivery_failure_ = {};
    delivered_.clear();
    committed_.clear();
    return Txn(rd_kafka_begin_transaction(rk_), "begin_transaction");
  }
  KafkaError Produce(const OutgoingRecord& record) override {
    const rd_kafka_resp_err_t e = ProduceCopy(rk_, record);
    if (e == RD_KAFKA_RESP_ERR_NO_ERROR) return {};
    const bool fatal = e == RD_KAFKA_RESP_ERR__FATAL || e == RD_KAFKA_RESP_ERR__FENCED;
    KafkaError error{fatal ? ErrorKind::kProducerFenced : ErrorKind::kAbortable,
                     rd_kafka_err2name(e),
                     "produce to " + std::string(record.topic) + " failed: " + rd_kafka_err2str(e)};
    // _STATE: an earlier record of the transaction failed (librdkafka made the
    // transaction abortable). Its delivery report says which failure, as at a commit;
    // librdkafka queues it just after it marks the transaction, so it may take a moment.
    if (e == RD_KAFKA_RESP_ERR__STATE) {
      for (int i = 0; i < kDeliveryReportWaits && delivery_failure_.ok(); ++i) {
        rd_kafka_poll(rk_, kDeliveryReportWaitMs);
      }
      TakeDeliveryFailure(error);
    }
    return error;
  }
  KafkaError SendOffsets(std::string_view topic, const std::vector<PartitionOffset>& offsets,
                         const GroupMetadata& group, std::chrono::milliseconds timeout) override {
    const auto& metadata = static_cast<const RdGroupConsumer::RdGroupMetadata&>(group);
    PartitionList list = ListOf(std::string(topic), offsets);
    return Txn(rd_kafka_send_offsets_to_transaction(rk_, list.get(), metadata.get(),
                                                    static_cast<int>(timeout.count())),
               "send_offsets_to_transaction");
  }
  KafkaError CommitTransaction(std::chrono::milliseconds timeout) override {
    KafkaError e =
        Txn(rd_kafka_commit_transaction(rk_, static_cast<int>(timeout.count())), "commit");
    // A failed delivery makes librdkafka refuse the commit as abortable; say which,
    // with the delivery's error code (a record too large, say).
    if (e && e.kind == ErrorKind::kAbortable) TakeDeliveryFailure(e);
    // A commit that may be retried keeps what was delivered for the retry to report.
    if (!e) {
      committed_ = std::move(delivered_);
      delivered_.clear();
    } else if (e.kind != ErrorKind::kRetriable) {
      delivered_.clear();
    }
    return e;
  }
  std::map<base::Partition, DeliveredRecords> OffsetsOfLastCommit(
      const std::string& topic) override {
    const auto it = committed_.find(topic);
    return it == committed_.end() ? std::map<base::Partition, DeliveredRecords>{} : it->second;
  }
  KafkaError AbortTransaction(std::chrono::milliseconds timeout) override {
    return Txn(rd_kafka_abort_transaction(rk_, static_cast<int>(timeout.count())),
               "abort_transaction");
  }
  void Poll() override { rd_kafka_poll(rk_, 0); }

 private:
  static constexpr int kDeliveryReportWaits = 10;
  static constexpr int kDeliveryReportWaitMs = 10;

  // Names the failed delivery behind `e` (code and message), serving the delivery
  // reports already queued when none was seen yet.
  void TakeDeliveryFailure(KafkaError& e) {
    if (delivery_failure_.ok()) rd_kafka_poll(rk_, 0);
    if (delivery_failure_.ok()) return;
    e.message += " (" + delivery_failure_.message + ")";
    e.code = delivery_failure_.code;
  }

  std::string id_;
  rd_kafka_t* rk_ = nullptr;
  KafkaError delivery_failure_;
  // topic → partition → where the records delivered went: in the open transaction,
  // and in the last committed one.
  std::map<std::string, std::map<base::Partition, DeliveredRecords>> delivered_;
  std::map<std::string, std::map<base::Partition, DeliveredRecords>> committed_;
  std::vector<rd_kafka_topic_t*> known_topics_;  // LookUpTopics
};

// --- Readers and the plain producer -----------------------------------------------------

class RdPartitionReader final : public PartitionReader, public HandleOwner {
 public:
  explicit RdPartitionReader(std::shared_ptr<const ClientLog> log) : HandleOwner(std::move(log)) {}
  ~RdPartitionReader() override {
    if (rk_ == nullptr) return;
    if (!closed_) rd_kafka_consumer_close(rk_);
    rd_kafka_destroy(rk_);
  }
  void set_handle(rd_kafka_t* rk) { rk_ = rk; }
  KafkaError Assign(const std::vector<TopicPartitionOffset>& partitions) override {
    PartitionList list(rd_kafka_topic_partition_list_new(static_cast<int>(partitions.size())));
    for (const TopicPartitionOffset& p : partitions) {
      rd_kafka_topic_partition_list_add(list.get(), p.topic.c_str(), p.partition.value())->offset =
          p.offset.value();
    }
    return Failed(rd_kafka_assign(rk_, list.get()), "assign");
  }
  KafkaError Seek(const TopicPartitionOffset& position) override {
    PartitionList list(rd_kafka_topic_partition_list_new(1));
    rd_kafka_topic_partition_list_add(list.get(), position.topic.c_str(),
                                      position.partition.value())
        ->offset = position.offset.value();
    if (KafkaError e = Failed(rd_kafka_seek_partitions(rk_, list.get(), 5000), "seek")) return e;
    return PartitionErrors(list.get(), "cannot seek");
  }
  std::optional<Message> Poll(std::chrono::milliseconds timeout) override {
    return PollConsumer(rk_, timeout);
  }
  // The reader's handle lists offsets read_committed (its isolation.level), so the
  // end it is told is the last stable offset.
  base::Result<base::Offset> StableEnd(const std::string& topic, base::Partition partition,
                                       std::chrono::milliseconds timeout) override {
    base::Offset end;
    if (KafkaError e = ListOffset(
            rk_, topic, partition, RD_KAFKA_OFFSET_END, timeout,
            "cannot read the stable end of " + topic + "/" + std::to_string(partition.value()),
            end)) {
      return e.ToError();
    }
    return end;
  }
  void Close() override {
    if (!closed_) rd_kafka_consumer_close(rk_);
    closed_ = true;
  }

 private:
  rd_kafka_t* rk_ = nullptr;
  bool closed_ = false;
};

class RdPlainProducer final : public PlainProducer, public HandleOwner {
 public:
  explicit RdPlainProducer(std::shared_ptr<const ClientLog> log) : HandleOwner(std::move(log)) {}
  ~RdPlainProducer() override {
    if (rk_ != nullptr) rd_kafka_destroy(rk_);
  }
  void set_handle(rd_kafka_t* rk) { rk_ = rk; }

  KafkaError Produce(const OutgoingRecord& record) override {
    const rd_kafka_resp_err_t e = TryProduceCopy(rk_, record);
    if (e == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
      return {ErrorKind::kRetriable, std::string(kQueueFull), "the producer's queue is full"};
    }
    if (e == RD_KAFKA_RESP_ERR__FATAL) {
      // The idempotent producer is done for (an InitProducerId refused, a sequence it
      // cannot recover): it refuses every record from now on, and only a new one sends.
      char reason[512] = "";
      const rd_kafka_resp_err_t cause = rd_kafka_fatal_error(rk_, reason, sizeof(reason));
      return {ErrorKind::kFatal, rd_kafka_err2name(cause),
              "produce to " + std::string(record.topic) + ": fatal error: " + reason};
    }
    return Failed(e, "produce to " + std::string(record.topic));
  }
  void Poll(std::chrono::milliseconds timeout) override {
    rd_kafka_poll(rk_, static_cast<int>(timeout.count()));
  }
  size_t Flush(std::chrono::milliseconds timeout) override {
    rd_kafka_flush(rk_, static_cast<int>(timeout.count()));
    return static_cast<size_t>(rd_kafka_outq_len(rk_));
  }
  const Deliveries& deliveries() const override { return deliveries_; }

  static void OnDelivery(rd_kafka_t*, const rd_kafka_message_t* m, void* opaque) {
    Deliveries& d = Of<RdPlainProducer>(opaque).deliveries_;
    if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
      ++d.acked;
      return;
    }
    d.last_error = rd_kafka_err2str(m->err);
    if (d.failed++ == 0) d.first_error = d.last_error;
  }

 private:
  rd_kafka_t* rk_ = nullptr;
  Deliveries deliveries_;  // written by OnDelivery, inside Poll and Flush
};

// --- The factory -----------------------------------------------------------------------

class RdKafkaClients final : public Clients {
 public:
  RdKafkaClients(std::string bootstrap, std::map<std::string, std::string> properties,
                 ClientLog client_log)
      : connection_{{"bootstrap.servers", std::move(bootstrap)}},
        properties_(std::move(properties)),
        log_(std::make_shared<const ClientLog>(std::move(client_log))),
        admin_owner_(log_) {}
  ~RdKafkaClients() override {
    if (config_answers_ != nullptr) rd_kafka_queue_destroy(config_answers_);
    if (admin_ != nullptr) rd_kafka_destroy(admin_);
  }

  base::Result<std::unique_ptr<GroupConsumer>> NewGroupConsumer(
      const GroupConsumerSpec& spec) override {
    Settings defaults = connection_;
    // A fetch returns as soon as data is there on a real broker, but the embedded
    // cluster holds every fetch for the full wait: keep it short for latency.
    defaults.push_back({"fetch.wait.max.ms", "20"});
    // librdkafka stops fetching once this many messages wait in the consumer's queue
    // and looks again only about once a second: at the default of 100,000 a backlog
    // was read in bursts with idle seconds between them.
    defaults.push_back({"queued.min.messages", "1000000"});
    Settings required = {{"group.id", spec.group_id},
                         {"partition.assignment.strategy", "cooperative-sticky"},
                         {"enable.auto.commit", "false"},
                         {"enable.auto.offset.store", "false"},
                         {"isolation.level", "read_committed"},
                         {"enable.partition.eof", "false"},
                         {"auto.offset.reset", spec.error_on_lost_position ? "error" : "earliest"}};
    const bool is_static = !spec.group_instance_id.empty();
    if (is_static) required.push_back({"group.instance.id", spec.group_instance_id});
    auto made = MakeClientConfig(defaults, properties_, required);
    if (!made) return std::move(made).error();
    rd_kafka_conf_t* conf = made.value();
    rd_kafka_conf_set_rebalance_cb(conf, &RdGroupConsumer::OnRebalance);
    auto consumer = std::make_unique<RdGroupConsumer>(
        log_, spec.topic, is_static && spec.static_member_leaves_on_close);
    auto rk = consumer->MakeHandle(RD_KAFKA_CONSUMER, conf, "consumer");
    if (!rk) return rk.error();
    rd_kafka_poll_set_consumer(rk.value());
    consumer->set_handle(rk.value());
    return std::unique_ptr<GroupConsumer>(std::move(consumer));
  }

  base::Result<std::unique_ptr<TransactionalProducer>> NewTransactionalProducer(
      const TransactionalProducerSpec& spec) override {
    Settings defaults = connection_;
    defaults.push_back({"linger.ms", "5"});
    auto made = MakeClientConfig(
        defaults, properties_,
        {{"transactional.id", spec.transactional_id},
         {"transaction.timeout.ms", std::to_string(spec.transaction_timeout.count())},
         {"enable.idempotence", "true"},
         {"message.max.bytes", "1000000"},
         {"batch.size", std::to_string(std::max<size_t>(spec.max_batch_bytes, 1))}});
    if (!made) return std::move(made).error();
    rd_kafka_conf_t* conf = made.value();
    auto producer = std::make_unique<RdTransactionalProducer>(log_, spec.transactional_id);
    // Delivery reports also wake the flush inside commit_transaction as soon as the
    // last record is acknowledged; without them it polls in 10 ms steps.
    rd_kafka_conf_set_dr_msg_cb(conf, &RdTransactionalProducer::OnDelivery);
    auto rk = producer->MakeHandle(RD_KAFKA_PRODUCER, conf, "transactional producer");
    if (!rk) return rk.error();
    producer->set_handle(rk.value());
    return std::unique_ptr<TransactionalProducer>(std::move(producer));
  }

  base::Result<std::unique_ptr<PartitionReader>> NewPartitionReader(
      const std::string& name) override {
    Settings defaults = connection_;
    defaults.push_back({"fetch.wait.max.ms", "20"});
    defaults.push_back({"queued.min.messages", "1000000"});
    defaults.push_back({"client.id", "oncecount-" + name});
    // A group id is required by the consumer API; readers never join it.
    auto made = MakeClientConfig(defaults, properties_,
                                 {{"group.id", "oncecount-" + name},
                                  {"enable.auto.commit", "false"},
                                  {"enable.auto.offset.store", "false"},
                                  {"enable.partition.eof", "true"},
                                  {"isolation.level", "read_committed"},
                                  {"auto.offset.reset", "earliest"}});
    auto reader = std::make_unique<RdPartitionReader>(log_);
    auto rk = reader->MakeHandle(RD_KAFKA_CONSUMER, std::move(made), "reader " + name);
    if (!rk) return rk.error();
    rd_kafka_poll_set_consumer(rk.value());
    reader->set_handle(rk.value());
    return std::unique_ptr<PartitionReader>(std::move(reader));
  }

  base::Result<std::unique_ptr<PlainProducer>> NewPlainProducer(
      const PlainProducerSpec& spec) override {
    // The spec's tuning is a default the user's kafka.properties may change; what
    // correctness needs is pinned: idempotence, and one request in flight when asked.
    Settings defaults = connection_;
    defaults.push_back({"linger.ms", std::to_string(spec.linger.count())});
    defaults.push_back({"queue.buffering.max.messages", std::to_string(spec.max_queued)});
    // The spec's delivery timeout holds whatever kafka.properties says: a longer one
    // there (or 0, unlimited) would keep a failed delivery unseen past it.
    std::map<std::string, std::string> user = properties_;
    if (spec.delivery_timeout.count() > 0) {
      int64_t timeout = spec.delivery_timeout.count();
      for (const char* name : {"message.timeout.ms", "delivery.timeout.ms"}) {
        const auto it = user.find(name);
        if (it == user.end()) continue;
        const int64_t asked = std::atoll(it->second.c_str());
        if (asked > 0) timeout = std::min(timeout, asked);
        user.erase(it);
      }
      defaults.push_back({"message.timeout.ms", std::to_string(timeout)});
    }
    Settings pinned = {{"enable.idempotence", "true"}};
    const std::string in_flight = std::to_string(spec.max_in_flight);
    (spec.max_in_flight == 1 ? pinned : defaults)
        .push_back({"max.in.flight.requests.per.connection", in_flight});
    auto made = MakeClientConfig(defaults, user, pinned);
    if (!made) return std::move(made).error();
    rd_kafka_conf_t* conf = made.value();
    auto producer = std::make_unique<RdPlainProducer>(log_);
    rd_kafka_conf_set_dr_msg_cb(conf, &RdPlainProducer::OnDelivery);
    auto rk = producer->MakeHandle(RD_KAFKA_PRODUCER, conf, "producer");
    if (!rk) return rk.error();
    producer->set_handle(rk.value());
    return std::unique_ptr<PlainProducer>(std::move(producer));
  }

  base::Result<std::map<std::string, int>> PartitionCounts(
      std::chrono::milliseconds timeout) override {
    if (base::Status s = EnsureAdmin(); !s) return std::move(s).error();
    const rd_kafka_metadata_t* md = nullptr;
    const rd_kafka_resp_err_t e =
        rd_kafka_metadata(admin_, 1, nullptr, &md, static_cast<int>(timeout.count()));
    if (e)
      return base::KafkaFailure(std::string("cannot read the cluster's metadata: ") +
                                rd_kafka_err2str(e));
    std::map<std::string, int> counts;
    for (int i = 0; i < md->topic_cnt; ++i) {
      if (md->topics[i].err == RD_KAFKA_RESP_ERR_NO_ERROR) {
        counts[md->topics[i].topic] = md->topics[i].partition_cnt;
      }
    }
    rd_kafka_metadata_destroy(md);
    return counts;
  }

  base::Result<BrokerSetting> DescribeBrokerSetting(const std::string& name,
                                                    std::chrono::milliseconds timeout) override {
    if (base::Status s = EnsureAdmin(); !s) return std::move(s).error();
    const auto deadline = std::chrono::steady_clock::now() + timeout;
    std::set<int32_t> waiting;
    {
      const rd_kafka_metadata_t* md = nullptr;
      if (const rd_kafka_resp_err_t e =
              rd_kafka_metadata(admin_, 0, nullptr, &md, static_cast<int>(timeout.count()))) {
        return base::KafkaFailure(std::string("cannot list the cluster's brokers: ") +
                                  rd_kafka_err2str(e));
      }
      for (int i = 0; i < md->broker_cnt; ++i) waiting.insert(md->brokers[i].id);
      rd_kafka_metadata_destroy(md);
    }
    BrokerSetting out;
    if (waiting.empty()) out.untold.push_back("the cluster lists no broker");
    // librdkafka sends a broker's DescribeConfigs to that broker: one request each,
    // all on one queue, the broker's id as the request's opaque (a request that fails
    // as a whole names no resource).
    std::unique_ptr<rd_kafka_queue_t, void (*)(rd_kafka_queue_t*)> answers(
        rd_kafka_queue_new(admin_), rd_kafka_queue_destroy);
    for (const int32_t broker : waiting) {
      AskDescribeConfigs(admin_, RD_KAFKA_RESOURCE_BROKER, std::to_string(broker), timeout,
                         reinterpret_cast<void*>(static_cast<intptr_t>(broker)), answers.get());
    }
    while (!waiting.empty()) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
          deadline - std::chrono::steady_clock::now());
      // The requests' own timeout answers first; the margin only guards against none.
      std::unique_ptr<rd_kafka_event_t, void (*)(rd_kafka_event_t*)> event(
          rd_kafka_queue_poll(answers.get(),
                              static_cast<int>(std::max<int64_t>(left.count(), 0)) + 1000),
          rd_kafka_event_destroy);
      if (!event) break;
      const auto broker =
          static_cast<int32_t>(reinterpret_cast<intptr_t>(rd_kafka_event_opaque(event.get())));
      if (waiting.erase(broker) == 0) continue;
      const std::string who = "broker " + std::to_string(broker) + ": ";
      if (rd_kafka_event_error(event.get()) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        out.untold.push_back(who + rd_kafka_event_error_string(event.get()));
        continue;
      }
      size_t count = 0;
      const rd_kafka_ConfigResource_t** resources = rd_kafka_DescribeConfigs_result_resources(
          rd_kafka_event_DescribeConfigs_result(event.get()), &count);
      std::optional<std::string> value;
      std::string why = "its answer does not hold the setting";
      for (size_t i = 0; i < count; ++i) {
        if (rd_kafka_ConfigResource_error(resources[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
          why = rd_kafka_ConfigResource_error_string(resources[i]);
          continue;
        }
        ForEachConfigEntry(resources[i], [&](std::string_view entry, const char* told) {
          if (entry == name) value = told;
        });
      }
      if (value) {
        out.told[broker] = *value;
      } else {
        out.untold.push_back(who + why);
      }
    }
    for (const int32_t broker : waiting) {
      out.untold.push_back("broker " + std::to_string(broker) + ": no answer within " +
                           std::to_string(timeout.count()) + " ms");
    }
    return out;
  }

  // Through ListGroups and DescribeGroups of every broker (rd_kafka_list_groups): in
  // librdkafka 2.0.2, DescribeConsumerGroups of a broker that does not implement it
  // (the embedded cluster) fails and then deadlocks the handle's main thread, which
  // every later admin question and the handle's destruction wait for.
  base::Result<GroupDescription> DescribeGroup(const std::string& group,
                                               std::chrono::milliseconds timeout) override {
    if (base::Status s = EnsureAdmin(); !s) return std::move(s).error();
    const std::string what = "cannot describe consumer group \"" + group + "\": ";
    // A refusal that asking again does not change is kKafka; anything else kUnavailable.
    const auto failure = [&](rd_kafka_resp_err_t e) {
      const bool lasting = e == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE ||
                           e == RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED ||
                           e == RD_KAFKA_RESP_ERR_CLUSTER_AUTHORIZATION_FAILED;
      return base::Error(lasting ? base::Errc::kKafka : base::Errc::kUnavailable,
                         what + rd_kafka_err2name(e) + ": " + rd_kafka_err2str(e));
    };
    const rd_kafka_group_list* listed = nullptr;
    const rd_kafka_resp_err_t e =
        rd_kafka_list_groups(admin_, group.c_str(), &listed, static_cast<int>(timeout.count()));
    // _PARTIAL: some broker did not answer, but one listed the group.
    if (e != RD_KAFKA_RESP_ERR_NO_ERROR && e != RD_KAFKA_RESP_ERR__PARTIAL) return failure(e);
    std::unique_ptr<const rd_kafka_group_list, void (*)(const rd_kafka_group_list*)> owned(
        listed, rd_kafka_group_list_destroy);
    GroupDescription described;
    // A broker that listed the group but could not describe it (no longer its
    // coordinator) is passed over when another described it.
    std::optional<rd_kafka_resp_err_t> undescribed;
    for (int i = 0; i < listed->group_cnt; ++i) {
      const rd_kafka_group_info& info = listed->groups[i];
      if (info.group == nullptr || group != info.group) continue;
      if (info.err != RD_KAFKA_RESP_ERR_NO_ERROR) {
        undescribed = info.err;
        continue;
      }
      described.listed = true;
      const auto text = [](const char* s) { return std::string(s != nullptr ? s : ""); };
      for (int m = 0; m < info.member_cnt; ++m) {
        described.members.push_back({text(info.members[m].client_id),
                                     text(info.members[m].client_host),
                                     text(info.members[m].member_id)});
      }
    }
    if (!described.listed && undescribed) return failure(*undescribed);
    return described;
  }

  // The admin handle reads read_uncommitted, so the end it is told is the high
  // watermark, not the last stable offset.
  base::Result<base::Offset> HighWatermark(const std::string& topic, base::Partition partition,
                                           std::chrono::milliseconds timeout) override {
    return AdminOffset(topic, partition, RD_KAFKA_OFFSET_END, "end", timeout);
  }

  base::Result<base::Offset> LogStart(const std::string& topic, base::Partition partition,
                                      std::chrono::milliseconds timeout) override {
    return AdminOffset(topic, partition, RD_KAFKA_OFFSET_BEGINNING, "start", timeout);
  }

  std::optional<size_t> MaxMessageBytes(const std::string& topic) override {
    const std::optional<TopicSettings> told = DescribeTopic(topic);
    return told ? told->max_message_bytes : std::nullopt;
  }

  std::optional<size_t> RetentionBytes(const std::string& topic) override {
    const std::optional<TopicSettings> told = DescribeTopic(topic);
    if (!told || !told->retention_bytes || *told->retention_bytes <= 0) return std::nullopt;
    return static_cast<size_t>(*told->retention_bytes);
  }

  std::optional<TopicSettings> DescribeTopic(const std::string& topic) override {
    std::lock_guard lock(config_mu_);
    if (!EnsureAdmin().ok()) return TopicSettings{};
    TakeConfigAnswers();
    auto [it, first] = topic_configs_.try_emplace(topic);
    // Asked again every few minutes, the last answer standing meanwhile: a setting
    // changed while the service runs (a changelog made compacted, a timestamp rule
    // dropped) is judged as one found at start.
    const auto now = std::chrono::steady_clock::now();
    if (first || (it->second && !config_outstanding_.contains(topic) &&
                  now - config_asked_at_[topic] >= kConfigRefresh)) {
      config_asked_at_[topic] = now;
      config_outstanding_.insert(topic);
      AskConfig(it->first);
    }
    return it->second;
  }

 private:
  // The partition's start or end (`which`), asked on the admin handle.
  base::Result<base::Offset> AdminOffset(const std::string& topic, base::Partition partition,
                                         int64_t which, const char* end_name,
                                         std::chrono::milliseconds timeout) {
    if (base::Status s = EnsureAdmin(); !s) return std::move(s).error();
    base::Offset offset;
    if (KafkaError e = ListOffset(admin_, topic, partition, which, timeout,
                                  std::string("cannot read the ") + end_name + " of " + topic +
                                      "/" + std::to_string(partition.value()),
                                  offset)) {
      return e.ToError();
    }
    return offset;
  }

  // `topic` is the key of its entry in topic_configs_ (which never loses one): the
  // request carries its address, so that a request that fails as a whole answers its
  // own question and no other.
  void AskConfig(const std::string& topic) {
    if (config_answers_ == nullptr) config_answers_ = rd_kafka_queue_new(admin_);
    AskDescribeConfigs(admin_, RD_KAFKA_RESOURCE_TOPIC, topic, std::chrono::seconds(30),
                       const_cast<std::string*>(&topic), config_answers_);
  }

  // Reads the DescribeConfigs answers that arrived, without waiting.
  void TakeConfigAnswers() {
    if (config_answers_ == nullptr) return;
    while (rd_kafka_event_t* event = rd_kafka_queue_poll(config_answers_, 0)) {
      const rd_kafka_DescribeConfigs_result_t* result =
          rd_kafka_event_DescribeConfigs_result(event);
      size_t count = 0;
      const rd_kafka_ConfigResource_t** resources =
          result != nullptr ? rd_kafka_DescribeConfigs_result_resources(result, &count) : nullptr;
      if (rd_kafka_event_error(event) != RD_KAFKA_RESP_ERR_NO_ERROR || count == 0) {
        // The request as a whole failed: a first question is answered with nothing
        // told (until it is asked again), one asked again keeps its last answer.
        if (const auto* asked = static_cast<const std::string*>(rd_kafka_event_opaque(event))) {
          config_outstanding_.erase(*asked);
          std::optional<TopicSettings>& answer = topic_configs_[*asked];
          if (!answer) answer = TopicSettings{};
        }
      }
      for (size_t i = 0; i < count; ++i) {
        const std::string topic = rd_kafka_ConfigResource_name(resources[i]);
        config_outstanding_.erase(topic);
        std::optional<TopicSettings>& answer = topic_configs_[topic];
        if (rd_kafka_ConfigResource_error(resources[i]) != RD_KAFKA_RESP_ERR_NO_ERROR) {
          if (!answer) answer = TopicSettings{};
          continue;
        }
        answer = TopicSettings{};
        ForEachConfigEntry(resources[i], [&](std::string_view name, const char* value) {
          const int64_t number = std::strtoll(value, nullptr, 10);
          if (name == "max.message.bytes" && number > 0) {
            answer->max_message_bytes = static_cast<size_t>(number);
          } else if (name == "retention.bytes") {
            answer->retention_bytes = number;
          } else if (name == "retention.ms") {
            answer->retention_ms = number;
          } else if (name == "cleanup.policy") {
            answer->cleanup_policy = value;
          } else if (name == "message.timestamp.type") {
            answer->timestamp_type = value;
          } else if (name == "message.timestamp.after.max.ms") {
            answer->timestamp_after_max_ms = number;
          } else if (name == "message.timestamp.difference.max.ms") {
            answer->timestamp_difference_max_ms = number;
          }
        });
      }
      rd_kafka_event_destroy(event);
    }
  }

  // A consumer handle that joins no group and reads read_uncommitted: metadata and
  // high watermarks. Made by the first caller, whichever thread it runs on.
  base::Status EnsureAdmin() {
    std::lock_guard lock(admin_mu_);
    if (admin_ != nullptr) return {};
    auto made = MakeClientConfig(connection_, properties_,
                                 {{"group.id", "oncecount-admin"},
                                  {"enable.auto.commit", "false"},
                                  {"isolation.level", "read_uncommitted"}});
    auto rk = admin_owner_.MakeHandle(RD_KAFKA_CONSUMER, std::move(made), "admin client");
    if (!rk) return rk.error();
    admin_ = rk.value();
    return {};
  }

  Settings connection_;
  std::map<std::string, std::string> properties_;
  std::shared_ptr<const ClientLog> log_;  // every handle's
  HandleOwner admin_owner_;
  std::mutex admin_mu_;  // guards the making of admin_ (EnsureAdmin)
  rd_kafka_t* admin_ = nullptr;
  std::mutex config_mu_;  // guards what follows
  rd_kafka_queue_t* config_answers_ = nullptr;
  // nullopt: asked, no answer yet.
  std::map<std::string, std::optional<TopicSettings>> topic_configs_;
  // When each topic was last asked, and which questions are still out.
  static constexpr std::chrono::minutes kConfigRefresh{5};
  std::map<std::string, std::chrono::steady_clock::time_point> config_asked_at_;
  std::set<std::string> config_outstanding_;
};

}  // namespace

KafkaError ClassifyTxnError(const rd_kafka_error_s* error) {
  if (error == nullptr) return {};
  const rd_kafka_resp_err_t code = rd_kafka_error_code(error);
  KafkaError out{ErrorKind::kFailed, rd_kafka_error_name(error), rd_kafka_error_string(error)};
  const bool fenced = code == RD_KAFKA_RESP_ERR__FENCED ||
                      code == RD_KAFKA_RESP_ERR_PRODUCER_FENCED ||
                      code == RD_KAFKA_RESP_ERR_INVALID_PRODUCER_EPOCH;
  if (fenced) {
    // librdkafka 2.0.2 reports PRODUCER_FENCED on AddOffsetsToTxn and TxnOffsetCommit
    // as an abortable _FENCED, not a fatal one; the producer is fenced all the same,
    // and only its abort's EndTxn would find out. Stop at once.
    out.kind = ErrorKind::kProducerFenced;
  } else if (rd_kafka_error_is_fatal(error)) {
    out.kind = ErrorKind::kFatal;
  } else if (rd_kafka_error_txn_requires_abort(error)) {
    const bool group_moved = code == RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION ||
                             code == RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID ||
                             code == RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID;
    out.kind = group_moved ? ErrorKind::kGroupFenced : ErrorKind::kAbortable;
  } else if (rd_kafka_error_is_retriable(error)) {
    out.kind = ErrorKind::kRetriable;
  }
  return out;
}

std::unique_ptr<Clients> MakeRdKafkaClients(std::string bootstrap_servers,
                                            std::map<std::string, std::string> properties,
                                            ClientLog client_log) {
  return std::make_unique<RdKafkaClients>(std::move(bootstrap_servers), std::move(properties),
                                          std::move(client_log));
}

}  // namespace oncecount::kafka
