// Copyright 2026 The stubkit Authors.
//
// A generated ListBooksRange against a real in-process server
// (protos/stubkit/testing/gen/pagination.proto): pages are fetched lazily,
// each by one ListBooks call under the retry rules and the call's options;
// an empty page that carries a token does not end the listing; an error
// ends it as its last element; the range's tokens resume a listing.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "stubkit/clock.h"
#include "stubkit/retry_options.h"
#include "stubkit/testing/gen/pagination.grpc.pb.h"
#include "stubkit/testing/gen/pagination.stubkit.h"

namespace stubkit {
namespace {

using ::pages::v1::ListBooksRequest;
using ::pages::v1::ListBooksResponse;
using ::pages::v1::PagesClient;

struct Page {
  std::vector<std::string> names;
  std::string next_page_token;
};

// Serves scripted pages by token. `failures[token]` first answers with
// that many UNAVAILABLEs (or a `final_error`, never recovering).
class BookPages : public ::pages::v1::Pages::Service {
 public:
  grpc::Status ListBooks(grpc::ServerContext* context,
                         const ListBooksRequest* request,
                         ListBooksResponse* response) override {
    absl::MutexLock lock(&mu_);
    calls.push_back(request->page_token());
    page_sizes.push_back(request->page_size());
    auto tenant = context->client_metadata().find("x-tenant");
    tenants.push_back(
        tenant == context->client_metadata().end()
            ? ""
            : std::string(tenant->second.data(), tenant->second.size()));
    if (final_error.count(request->page_token()) > 0) {
      return grpc::Status(grpc::StatusCode::PERMISSION_DENIED, "no more");
    }
    int& left = failures[request->page_token()];
    if (left > 0) {
      --left;
      return grpc::Status(grpc::StatusCode::UNAVAILABLE, "try again");
    }
    auto page = pages.find(request->page_token());
    if (page == pages.end()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "bad token");
    }
    for (const std::string& name : page->second.names) {
      response->add_books()->set_name(name);
    }
    response->set_next_page_token(page->second.next_page_token);
    return grpc::Status::OK;
  }

  std::vector<std::string> Calls() {
    absl::MutexLock lock(&mu_);
    return calls;
  }

  absl::Mutex mu_;
  std::map<std::string, Page> pages;
  std::map<std::string, int> failures;
  std::map<std::string, bool> final_error;
  std::vector<std::string> calls;
  std::vector<int> page_sizes;
  std::vector<std::string> tenants;
};

class GeneratedPaginationTest : public ::testing::Test {
 protected:
  GeneratedPaginationTest() {
    // Three pages, the middle one empty but carrying a token.
    service_.pages[""] = Page{{"a", "b"}, "t1"};
    service_.pages["t1"] = Page{{}, "t2"};
    service_.pages["t2"] = Page{{"c"}, ""};
    grpc::ServerBuilder builder;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(),
                             &port_);
    builder.RegisterService(&service_);
    server_ = builder.BuildAndStart();
  }
  ~GeneratedPaginationTest() override { server_->Shutdown(); }

  PagesClient Client() {
    return PagesClient(
        grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                            grpc::InsecureChannelCredentials()),
        Options{}
            .set<ClockOption>(clock_)
            .set<SleeperOption>(clock_)
            .set<RetryPolicyOption>(LimitedErrorCountRetryPolicy(3))
            .set<BackoffPolicyOption>(ExponentialBackoffPolicy(
                std::chrono::seconds(1), std::chrono::seconds(10), 2.0,
                Jitter::None())));
  }

  static ListBooksRequest Request() {
    ListBooksRequest request;
    request.set_parent("shelves/s");
    request.set_page_size(2);
    return request;
  }

  std::shared_ptr<FakeClock> clock_ = std::make_shared<FakeClock>();
  BookPages service_;
  int port_ = 0;
  std::unique_ptr<grpc::Server> server_;
};

// Every item once, in order; the empty page is fetched through, not taken
// for the end (google-cloud-cpp #11936).
TEST_F(GeneratedPaginationTest, ThreePagesOneOfThemEmptyWithAToken) {
  ASSERT_NE(server_, nullptr);
  auto range = Client().ListBooksRange(
      Request(), Options{}.set<MetadataOption>({{"x-tenant", "blue"}}));
  EXPECT_TRUE(service_.Calls().empty()) << "fetched before it was iterated";
  std::vector<std::string> names;
  for (const absl::StatusOr<::pages::v1::Book>& book : range) {
    ASSERT_TRUE(book.ok()) << book.status();
    names.push_back(book->name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(service_.Calls(), (std::vector<std::string>{"", "t1", "t2"}));
  // Each page is a call with the request's fields and the call's options.
  {
    absl::MutexLock lock(&service_.mu_);
    EXPECT_EQ(service_.page_sizes, (std::vector<int>{2, 2, 2}));
    EXPECT_EQ(service_.tenants,
              (std::vector<std::string>{"blue", "blue", "blue"}));
  }
  EXPECT_EQ(range.next_page_token(), "");
}

// The page fails with UNAVAILABLE, then succeeds: retried inside the range
// (ListBooks is a GET, so idempotent), and no item is lost or repeated.
TEST_F(GeneratedPaginationTest, APageFailingUnavailableThenSucceeding) {
  ASSERT_NE(server_, nullptr);
  {
    absl::MutexLock lock(&service_.mu_);
    service_.failures["t2"] = 1;
  }
  std::vector<std::string> names;
  for (const auto& book : Client().ListBooksRange(Request())) {
    ASSERT_TRUE(book.ok()) << book.status();
    names.push_back(book->name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(service_.Calls(), (std::vector<std::string>{"", "t1", "t2", "t2"}));
}

// A page that keeps failing ends the range with its status, the last
// element; next_page_token() resumes the listing at that page later.
TEST_F(GeneratedPaginationTest, AnErrorEndsTheRangeAndItResumesByToken) {
  ASSERT_NE(server_, nullptr);
  {
    absl::MutexLock lock(&service_.mu_);
    service_.final_error["t2"] = true;
  }
  auto range = Client().ListBooksRange(Request());
  std::vector<std::string> names;
  absl::Status last;
  int after_error = 0;
  for (const auto& book : range) {
    if (!last.ok()) ++after_error;
    if (!book.ok()) {
      last = book.status();
      continue;
    }
    names.push_back(book->name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kPermissionDenied) << last;
  EXPECT_EQ(after_error, 0);
  EXPECT_EQ(range.next_page_token(), "t2");

  {
    absl::MutexLock lock(&service_.mu_);
    service_.final_error.clear();
  }
  ListBooksRequest resume = Request();
  resume.set_page_token(range.next_page_token());
  names.clear();
  for (const auto& book : Client().ListBooksRange(resume)) {
    ASSERT_TRUE(book.ok()) << book.status();
    names.push_back(book->name());
  }
  EXPECT_EQ(names, std::vector<std::string>{"c"});
}

// Stopping after the first item: nothing beyond the first page is fetched.
TEST_F(GeneratedPaginationTest, StoppingEarlyFetchesNoMorePages) {
  ASSERT_NE(server_, nullptr);
  auto range = Client().ListBooksRange(Request());
  auto it = range.begin();
  ASSERT_NE(it, range.end());
  EXPECT_EQ((*it)->name(), "a");
  EXPECT_EQ(service_.Calls(), std::vector<std::string>{""});
  EXPECT_EQ(range.page_token(), "");
  EXPECT_EQ(range.next_page_token(), "t1");
}

}  // namespace
}  // namespace stubkit
