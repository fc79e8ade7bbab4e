// Copyright 2026 The stubkit Authors.
//
// A generated ListBooksRange against a real in-process server
// (protos/stubkit/testing/gen/pagination.proto): pages are fetched lazily,
// each by one ListBooks call under the retry rules and the call's options;
// an empty page that carries a token does not end the listing; an error
// ends it as its last element; the range's tokens resume a listing; a
// server that repeats a page token ends the range with INTERNAL instead of
// listing forever; PageRangeMaxPagesOption and PageRangeTotalTimeoutOption
// bound a range.

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/synchronization/mutex.h"
#include "stubkit/clock.h"
#include "stubkit/method_options.h"
#include "stubkit/page_range.h"
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
    // Stops a range that would never end (the repeated-token defect).
    if (calls.size() > 100) {
      return grpc::Status(grpc::StatusCode::ABORTED, "looped");
    }
    // What the page's call had left, from its deadline; then the page
    // "takes" `page_time` of the test's clock.
    time_left.push_back(std::chrono::duration_cast<std::chrono::milliseconds>(
        context->deadline() - std::chrono::system_clock::now()));
    if (clock != nullptr) clock->Advance(page_time);
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
  std::vector<std::chrono::milliseconds> time_left;
  std::shared_ptr<FakeClock> clock;
  std::chrono::nanoseconds page_time{0};
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
            .set<RetryPolicyOption>(RetryPolicy::LimitedErrorCount(3))
            .set<BackoffPolicyOption>(
                ExponentialBackoffPolicy()
                    .WithInitialDelay(std::chrono::seconds(1))
                    .WithMaximumDelay(std::chrono::seconds(10))
                    .WithMultiplier(2.0)
                    .WithJitter(Jitter::None())));
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

// Each element of `range`, as the book's name or "error"; the error in
// `*last`.
std::vector<std::string> Elements(PageRange<::pages::v1::Book>& range,
                                  absl::Status* last) {
  std::vector<std::string> elements;
  for (const auto& book : range) {
    if (book.ok()) {
      elements.push_back(book->name());
    } else {
      elements.push_back("error");
      *last = book.status();
    }
  }
  return elements;
}

// The server answers an empty page with the token it was sent: the range
// used to fetch it for ever; now it ends with INTERNAL.
TEST_F(GeneratedPaginationTest, EmptyPagesWithTheSameTokenEndTheRange) {
  ASSERT_NE(server_, nullptr);
  {
    absl::MutexLock lock(&service_.mu_);
    service_.pages["t1"] = Page{{}, "t1"};
  }
  auto range = Client().ListBooksRange(Request());
  absl::Status last;
  EXPECT_EQ(Elements(range, &last),
            (std::vector<std::string>{"a", "b", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kInternal) << last;
  EXPECT_TRUE(absl::StrContains(last.message(),
                                "repeated page token \"t1\" after 2 pages"))
      << last;
  EXPECT_EQ(service_.Calls(), (std::vector<std::string>{"", "t1"}));
  EXPECT_EQ(range.next_page_token(), "t1");
}

// With items, the same items came back for ever; now once, then the error.
TEST_F(GeneratedPaginationTest, ItemsWithTheSameTokenEndTheRange) {
  ASSERT_NE(server_, nullptr);
  {
    absl::MutexLock lock(&service_.mu_);
    service_.pages["t1"] = Page{{"x"}, "t1"};
  }
  auto range = Client().ListBooksRange(Request());
  absl::Status last;
  EXPECT_EQ(Elements(range, &last),
            (std::vector<std::string>{"a", "b", "x", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kInternal) << last;
  EXPECT_EQ(service_.Calls(), (std::vector<std::string>{"", "t1"}));
}

TEST_F(GeneratedPaginationTest, ACycleOfTokensEndsTheRange) {
  ASSERT_NE(server_, nullptr);
  {
    absl::MutexLock lock(&service_.mu_);
    service_.pages[""] = Page{{"a"}, "A"};
    service_.pages["A"] = Page{{"b"}, "B"};
    service_.pages["B"] = Page{{"c"}, "A"};
  }
  auto range = Client().ListBooksRange(Request());
  absl::Status last;
  EXPECT_EQ(Elements(range, &last),
            (std::vector<std::string>{"a", "b", "c", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kInternal) << last;
  EXPECT_TRUE(absl::StrContains(
      last.message(),
      "repeated page token \"A\" after 3 pages: the range sent it for page 2"))
      << last;
  EXPECT_EQ(service_.Calls(), (std::vector<std::string>{"", "A", "B"}));
  // Resumable from where it stopped (the server's cycle aside).
  EXPECT_EQ(range.page_token(), "B");
  EXPECT_EQ(range.next_page_token(), "A");
}

// A bound on the pages, set per method like any option; the range ends
// with RESOURCE_EXHAUSTED and resumes from next_page_token().
TEST_F(GeneratedPaginationTest, MaxPagesBoundsTheRangeAndItResumes) {
  ASSERT_NE(server_, nullptr);
  auto client =
      PagesClient(grpc::CreateChannel("127.0.0.1:" + std::to_string(port_),
                                      grpc::InsecureChannelCredentials()),
                  Options{}.set<MethodOptionsOption>(
                      {{"pages.v1.Pages.ListBooks",
                        Options{}.set<PageRangeMaxPagesOption>(2)}}));
  auto range = client.ListBooksRange(Request());
  absl::Status last;
  EXPECT_EQ(Elements(range, &last),
            (std::vector<std::string>{"a", "b", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kResourceExhausted) << last;
  EXPECT_EQ(service_.Calls(), (std::vector<std::string>{"", "t1"}));
  ListBooksRequest resume = Request();
  resume.set_page_token(range.next_page_token());
  auto rest = client.ListBooksRange(resume);
  EXPECT_EQ(Elements(rest, &last), std::vector<std::string>{"c"});
  // The call's own value wins over the method's.
  auto unbounded = client.ListBooksRange(
      Request(), Options{}.set<PageRangeMaxPagesOption>(0));
  EXPECT_EQ(Elements(unbounded, &last),
            (std::vector<std::string>{"a", "b", "c"}));
}

// A bound on the range's life, on the fake clock (each page "takes" 10 s):
// pages start at 0, 10 and 20 s, and the fourth, due at 30 s, is past the
// 25 s limit. Each page's call has only what is left of the range.
TEST_F(GeneratedPaginationTest, TotalTimeoutBoundsTheRangeOnItsClock) {
  ASSERT_NE(server_, nullptr);
  {
    absl::MutexLock lock(&service_.mu_);
    service_.pages["t2"] = Page{{"c"}, "t3"};
    service_.pages["t3"] = Page{{"d"}, ""};
    service_.clock = clock_;
    service_.page_time = std::chrono::seconds(10);
  }
  auto range = Client().ListBooksRange(
      Request(),
      Options{}.set<PageRangeTotalTimeoutOption>(std::chrono::seconds(25)));
  absl::Status last;
  EXPECT_EQ(Elements(range, &last),
            (std::vector<std::string>{"a", "b", "c", "error"}));
  EXPECT_EQ(last.code(), absl::StatusCode::kDeadlineExceeded) << last;
  EXPECT_TRUE(absl::StrContains(last.message(), "after 3 pages")) << last;
  EXPECT_EQ(service_.Calls(), (std::vector<std::string>{"", "t1", "t2"}));
  EXPECT_EQ(range.next_page_token(), "t3");
  absl::MutexLock lock(&service_.mu_);
  ASSERT_EQ(service_.time_left.size(), 3u);
  // 25 s, 15 s and 5 s left; a margin for the real time gRPC takes and
  // for grpc-timeout's rounding up.
  const auto margin = std::chrono::milliseconds(500);
  EXPECT_LE(service_.time_left[0], std::chrono::seconds(25) + margin);
  EXPECT_GT(service_.time_left[0], std::chrono::seconds(20));
  EXPECT_LE(service_.time_left[1], std::chrono::seconds(15) + margin);
  EXPECT_GT(service_.time_left[1], std::chrono::seconds(10));
  EXPECT_LE(service_.time_left[2], std::chrono::seconds(5) + margin);
  EXPECT_GT(service_.time_left[2], std::chrono::seconds(0));
}

// The method's own TotalTimeoutOption, when shorter, stays each page's.
TEST_F(GeneratedPaginationTest, AShorterCallTimeoutStaysThePagesOwn) {
  ASSERT_NE(server_, nullptr);
  auto range = Client().ListBooksRange(
      Request(), Options{}
                     .set<PageRangeTotalTimeoutOption>(std::chrono::hours(1))
                     .set<TotalTimeoutOption>(std::chrono::seconds(7)));
  absl::Status last;
  EXPECT_EQ(Elements(range, &last), (std::vector<std::string>{"a", "b", "c"}));
  absl::MutexLock lock(&service_.mu_);
  ASSERT_EQ(service_.time_left.size(), 3u);
  for (auto left : service_.time_left) {
    EXPECT_LE(left, std::chrono::milliseconds(7500));
    EXPECT_GT(left, std::chrono::seconds(2));
  }
}

TEST_F(GeneratedPaginationTest, ANegativeBoundFetchesNothing) {
  ASSERT_NE(server_, nullptr);
  absl::Status last;
  auto range = Client().ListBooksRange(
      Request(),
      Options{}.set<PageRangeTotalTimeoutOption>(std::chrono::seconds(-1)));
  EXPECT_EQ(Elements(range, &last), std::vector<std::string>{"error"});
  EXPECT_EQ(last.code(), absl::StatusCode::kInvalidArgument) << last;
  auto pages = Client().ListBooksRange(
      Request(), Options{}.set<PageRangeMaxPagesOption>(-3));
  EXPECT_EQ(Elements(pages, &last), std::vector<std::string>{"error"});
  EXPECT_EQ(last.code(), absl::StatusCode::kInvalidArgument) << last;
  EXPECT_TRUE(service_.Calls().empty());
}

}  // namespace
}  // namespace stubkit
