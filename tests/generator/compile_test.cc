// Copyright 2026 The stubkit Authors.
//
// Code generated from awkward protos compiles, links, and describes its
// methods correctly. Most checks are static: if this file builds, the
// generator handled several services per file, nested packages, no package,
// proto2 and proto3, imports across directories, names that clash with C++
// keywords or generated names, services without methods, deprecated and
// streaming methods, and Google API annotations.

#include <grpcpp/create_channel.h>
#include <grpcpp/security/credentials.h>
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <type_traits>

#include "google/longrunning/operations.stubkit.h"
#include "stubkit/testing/gen/googleapi.stubkit_mock.h"
#include "stubkit/testing/gen/kitchen_sink.stubkit_mock.h"
#include "stubkit/testing/gen/lro.stubkit_mock.h"
#include "stubkit/testing/gen/no_package.stubkit_mock.h"
#include "stubkit/testing/gen/proto2.stubkit_mock.h"

namespace {

namespace lib = ::stubkit::testing::gen::library::v1;
namespace sink = ::stubkit::testing::gen::deeply::nested::pkg;
namespace legacy = ::stubkit::testing::gen::legacy;
namespace lro = ::stubkit::testing::gen::lro::v1;
using ::stubkit::Idempotency;
using ::stubkit::RpcKind;

// google.api.http: get and put are idempotent; post, delete and a
// long-running operation are not, unless idempotency_level says so.
static_assert(lib::LibraryMethods::kGetBook.default_idempotency ==
              Idempotency::kIdempotent);
static_assert(lib::LibraryMethods::kPutBook.default_idempotency ==
              Idempotency::kIdempotent);
static_assert(lib::LibraryMethods::kCreateBook.default_idempotency ==
              Idempotency::kNonIdempotent);
static_assert(lib::LibraryMethods::kDeleteBook.default_idempotency ==
              Idempotency::kNonIdempotent);
static_assert(lib::LibraryMethods::kTouchBook.default_idempotency ==
              Idempotency::kIdempotent);
static_assert(lib::LibraryMethods::kArchiveBooks.default_idempotency ==
              Idempotency::kNonIdempotent);
static_assert(std::is_same_v<decltype(std::declval<lib::LibraryClient&>()
                                          .ArchiveBooks(lib::GetBookRequest{})),
                             absl::StatusOr<google::longrunning::Operation>>);
// ... and its awaiters (AIP-151): operation_info says google.protobuf.Empty.
static_assert(
    std::is_same_v<decltype(std::declval<lib::LibraryClient&>()
                                .AwaitArchiveBooks(lib::GetBookRequest{})),
                   absl::StatusOr<google::protobuf::Empty>>);

// operation_info types resolved as protoc resolves names: unqualified (in
// the package), partly qualified from an enclosing package, absolute.
template <typename T>
using Awaited = absl::StatusOr<T>;
static_assert(
    std::is_same_v<decltype(std::declval<lro::JobsClient&>().AwaitStartJob({})),
                   Awaited<lro::Job>>);
static_assert(
    std::is_same_v<decltype(std::declval<lro::JobsClient&>().AsyncAwaitStartJob(
                       lro::StartJobRequest{})),
                   std::future<Awaited<lro::Job>>>);
static_assert(std::is_same_v<
              decltype(std::declval<lro::JobsClient&>().AwaitExportJob({})),
              Awaited<stubkit::testing::gen::common::Entry>>);
static_assert(std::is_same_v<decltype(std::declval<lro::JobsClient&>()
                                          .AwaitDeleteJob(lro::Job{})),
                             Awaited<google::protobuf::Empty>>);
static_assert(
    std::is_same_v<decltype(std::declval<lro::JobsClient&>()
                                .AwaitDeleteJobByName("operations/1")),
                   Awaited<google::protobuf::Empty>>);
static_assert(
    std::is_same_v<decltype(std::declval<lro::JobsClient&>()
                                .AsyncAwaitDeleteJobByName("operations/1")),
                   std::future<Awaited<google::protobuf::Empty>>>);
// An Operation without operation_info stays a plain unary method.
template <typename C, typename = void>
struct HasAwaitPeekJob : std::false_type {};
template <typename C>
struct HasAwaitPeekJob<
    C, std::void_t<decltype(std::declval<C&>().AwaitPeekJob(lro::Job{}))>>
    : std::true_type {};
static_assert(!HasAwaitPeekJob<lro::JobsClient>::value);
static_assert(std::is_same_v<
              decltype(std::declval<lro::JobsClient&>().PeekJob(lro::Job{})),
              Awaited<google::longrunning::Operation>>);
// So does one whose operation_info names a response type the file cannot
// see, or none; a metadata type it cannot see does not matter.
template <typename C, typename = void>
struct HasAwaitArchiveJob : std::false_type {};
template <typename C>
struct HasAwaitArchiveJob<
    C, std::void_t<decltype(std::declval<C&>().AwaitArchiveJob(lro::Job{}))>>
    : std::true_type {};
static_assert(!HasAwaitArchiveJob<lro::JobsClient>::value);
template <typename C, typename = void>
struct HasAwaitTouchJob : std::false_type {};
template <typename C>
struct HasAwaitTouchJob<
    C, std::void_t<decltype(std::declval<C&>().AwaitTouchJob(lro::Job{}))>>
    : std::true_type {};
static_assert(!HasAwaitTouchJob<lro::JobsClient>::value);
static_assert(std::is_same_v<
              decltype(std::declval<lro::JobsClient&>().ArchiveJob(lro::Job{})),
              Awaited<google::longrunning::Operation>>);
static_assert(
    std::is_same_v<
        decltype(std::declval<lro::JobsClient&>().AwaitRestoreJob(lro::Job{})),
        Awaited<lro::Job>>);

// idempotency_level.
static_assert(sink::MixedMethods::kGet.default_idempotency ==
              Idempotency::kIdempotent);
static_assert(sink::MixedMethods::kOldGet.default_idempotency ==
              Idempotency::kNonIdempotent);
static_assert(legacy::LegacyMethods::kFetch.default_idempotency ==
              Idempotency::kIdempotent);
static_assert(legacy::LegacyMethods::kStore.default_idempotency ==
              Idempotency::kNonIdempotent);

// Kinds.
static_assert(sink::MixedMethods::kList.kind == RpcKind::kServerStreaming);
static_assert(sink::MixedMethods::kUpload.kind == RpcKind::kClientStreaming);
static_assert(sink::MixedMethods::kSync.kind == RpcKind::kBidiStreaming);
static_assert(NoPackageMethods::kWatch.kind == RpcKind::kServerStreaming);

// Methods named after generated layers return the proto's own messages.
static_assert(std::is_same_v<decltype(std::declval<sink::ClashesClient&>()
                                          .Client(sink::Options{})),
                             absl::StatusOr<sink::Status>>);
static_assert(std::is_same_v<decltype(std::declval<sink::ClashesClient&>()
                                          .Connection(sink::Stub{})),
                             absl::StatusOr<sink::Client>>);

// Streaming signatures.
static_assert(std::is_same_v<
              decltype(std::declval<sink::MixedClient&>().List(
                  stubkit::testing::gen::common::Page{})),
              stubkit::StreamReader<stubkit::testing::gen::common::Entry>>);
static_assert(
    std::is_same_v<decltype(std::declval<sink::MixedClient&>().Upload()),
                   stubkit::StreamWriter<stubkit::testing::gen::common::Entry,
                                         stubkit::testing::gen::common::Page>>);

// Near misses (kitchen_sink.proto's NearMisses): rpc AsyncX next to rpc X
// where C++ tells the overloads apart, and grpc_cpp_plugin's Raw and
// PrepareAsync names.
using NearMisses = sink::NearMissesClient;
static_assert(std::is_same_v<
              decltype(std::declval<NearMisses&>().AsyncAnnotate(sink::Stub{})),
              absl::StatusOr<sink::Status>>);
static_assert(std::is_same_v<decltype(std::declval<NearMisses&>().AsyncAnnotate(
                                 sink::Options{})),
                             std::future<absl::StatusOr<sink::Status>>>);
static_assert(std::is_same_v<
              decltype(std::declval<NearMisses&>().AsyncWatch(sink::Options{})),
              absl::StatusOr<sink::Status>>);
static_assert(std::is_same_v<
              decltype(std::declval<NearMisses&>().AsyncFeed(sink::Options{})),
              stubkit::StreamReader<sink::Status>>);
static_assert(
    std::is_same_v<decltype(std::declval<NearMisses&>().AsyncPutAttempt()),
                   stubkit::StreamWriter<sink::Options, sink::Status>>);
// The mocks are in a nested namespace, so a message may take their name.
static_assert(
    std::is_base_of_v<google::protobuf::Message, sink::MockNearMissesStub>);
static_assert(std::is_base_of_v<sink::NearMissesStub,
                                sink::stubkit_mocks::MockNearMissesStub>);

std::shared_ptr<grpc::Channel> Nowhere() {
  // Nothing listens there; calls fail fast with a deadline.
  return grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials());
}

TEST(CompileTest, EveryServiceCanBeBuilt) {
  sink::EmptyClient empty(Nowhere());
  sink::ClashesClient clashes(Nowhere());
  sink::MixedClient mixed(Nowhere());
  lib::LibraryClient library(Nowhere());
  legacy::LegacyClient legacy_client(Nowhere());
  NoPackageClient no_package(Nowhere());
  sink::NearMissesClient near_misses(Nowhere());
  google::longrunning::OperationsClient operations(Nowhere());
  lro::JobsClient jobs(Nowhere());
  // Copyable value types.
  sink::MixedClient copy = mixed;
  (void)copy;
  (void)empty;
  SUCCEED();
}

TEST(CompileTest, ProtoTwoCallFailsCleanlyWithoutServer) {
  legacy::LegacyClient client(
      Nowhere(),
      stubkit::Options{}
          .set<stubkit::RetryPolicyOption>(
              stubkit::RetryPolicy::LimitedErrorCount(0))
          .set<stubkit::TotalTimeoutOption>(std::chrono::milliseconds(200)));
  legacy::Outer_Inner request;
  request.set_id(7);
  absl::StatusOr<legacy::Outer> response = client.Fetch(request);
  EXPECT_FALSE(response.ok());
}

TEST(CompileTest, MocksOfAwkwardServicesWork) {
  auto connection =
      std::make_shared<sink::stubkit_mocks::MockClashesConnection>();
  sink::Status status;
  status.set_code(42);
  EXPECT_CALL(*connection, Client(::testing::_, ::testing::_))
      .WillOnce(::testing::Return(status));
  sink::ClashesClient client(connection);
  absl::StatusOr<sink::Status> result = client.Client(sink::Options{});
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(result->code(), 42);

  auto no_package = std::make_shared<stubkit_mocks::MockNoPackageConnection>();
  EXPECT_CALL(*no_package, Watch(::testing::_, ::testing::_))
      .WillOnce([](const stubkit::OptionsView&, const NoPackageRequest&) {
        NoPackageResponse r;
        r.add_values("v");
        return stubkit::MakeStreamReader<NoPackageResponse>({r, r});
      });
  NoPackageClient np(no_package);
  NoPackageRequest request;
  request.set_key("k");
  auto reader = np.Watch(request);
  NoPackageResponse r;
  int n = 0;
  while (reader.Read(&r)) ++n;
  EXPECT_EQ(n, 2);
  EXPECT_TRUE(reader.Finish().ok());
}

}  // namespace
