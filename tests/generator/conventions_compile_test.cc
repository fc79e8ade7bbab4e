// Copyright 2026 The stubkit Authors.
//
// Code generated from protos that follow the API conventions
// (protos/stubkit/testing/gen/pagination.proto, routing.proto, and
// keywords.proto, whose fields are named with keywords of every class)
// compiles against the .pb.h protoc makes and has the members it should: MRange
// for each paginated method, with the items type the rules pick, and nothing
// for the near misses. The ranges run here over mocked connections;
// tests/integration/generated_pagination_ test.cc and generated_routing_test.cc
// run them against real servers.

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#ifndef STUBKIT_NO_KEYWORDS_PROTO  // C++17 only (tests/generator/CMakeLists.txt)
#include "stubkit/testing/gen/keywords.stubkit_mock.h"
#endif
#include "stubkit/testing/gen/pagination.stubkit_mock.h"
#include "stubkit/testing/gen/routing.stubkit_mock.h"

namespace {

using ::pages::v1::ListBooksRequest;
using ::pages::v1::PagesClient;
using ::testing::_;

template <typename Client, typename = void>
struct HasListAllRange : std::false_type {};
template <typename Client>
struct HasListAllRange<
    Client, std::void_t<decltype(std::declval<Client&>().ListAllRange(
                ListBooksRequest{}))>> : std::true_type {};

template <typename Client, typename = void>
struct HasStreamBooksRange : std::false_type {};
template <typename Client>
struct HasStreamBooksRange<
    Client, std::void_t<decltype(std::declval<Client&>().StreamBooksRange(
                ListBooksRequest{}))>> : std::true_type {};

// One repeated field: its type.
static_assert(std::is_same_v<decltype(std::declval<PagesClient&>()
                                          .ListBooksRange(ListBooksRequest{})),
                             stubkit::PageRange<::pages::v1::Book>>);
// Several: the lowest field number (shelves = 2, not unreachable = 3).
static_assert(
    std::is_same_v<decltype(std::declval<PagesClient&>().ListShelvesRange(
                       ListBooksRequest{}, stubkit::Options{})),
                   stubkit::PageRange<::pages::v1::Book>>);
// A map: pairs; max_results counts as page_size.
static_assert(
    std::is_same_v<decltype(std::declval<PagesClient&>().ListLabelsRange(
                       ::pages::v1::ListLabelsRequest{})),
                   stubkit::PageRange<std::pair<std::string, std::int64_t>>>);
// Enums: the enum type.
static_assert(
    std::is_same_v<decltype(std::declval<PagesClient&>().ListStatesRange(
                       ListBooksRequest{})),
                   stubkit::PageRange<::pages::v1::ListStatesResponse_State>>);
// Near misses: no next_page_token, or streaming.
static_assert(!HasListAllRange<PagesClient>::value);
static_assert(!HasStreamBooksRange<PagesClient>::value);
static_assert(std::is_same_v<stubkit::PageRange<int>::iterator::value_type,
                             absl::StatusOr<int>>);

::pages::v1::ListShelvesResponse ShelvesPage(std::vector<std::string> names,
                                             std::string next) {
  ::pages::v1::ListShelvesResponse page;
  for (const std::string& name : names) {
    page.add_shelves()->set_name(name);
    page.add_unreachable("not an item: " + name);
  }
  page.set_next_page_token(std::move(next));
  return page;
}

TEST(ConventionsCompileTest, RangeOfSeveralRepeatedFieldsListsTheFirst) {
  auto connection =
      std::make_shared<::pages::v1::stubkit_mocks::MockPagesConnection>();
  std::vector<std::string> tokens;
  EXPECT_CALL(*connection, ListShelves(_, _))
      .WillRepeatedly(
          [&](const stubkit::OptionsView&, const ListBooksRequest& request)
              -> absl::StatusOr<::pages::v1::ListShelvesResponse> {
            tokens.push_back(request.page_token());
            if (request.page_token().empty())
              return ShelvesPage({"a", "b"}, "t1");
            return ShelvesPage({"c"}, "");
          });
  PagesClient client(connection);
  std::vector<std::string> names;
  for (const auto& shelf : client.ListShelvesRange(ListBooksRequest{})) {
    ASSERT_TRUE(shelf.ok()) << shelf.status();
    names.push_back(shelf->name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"a", "b", "c"}));
  EXPECT_EQ(tokens, (std::vector<std::string>{"", "t1"}));
}

TEST(ConventionsCompileTest, MapAndEnumItems) {
  auto connection =
      std::make_shared<::pages::v1::stubkit_mocks::MockPagesConnection>();
  EXPECT_CALL(*connection, ListLabels(_, _))
      .WillOnce([](const stubkit::OptionsView&,
                   const ::pages::v1::ListLabelsRequest& request)
                    -> absl::StatusOr<::pages::v1::ListLabelsResponse> {
        EXPECT_EQ(request.max_results(), 5u);
        ::pages::v1::ListLabelsResponse page;
        (*page.mutable_labels())["x"] = 7;
        return page;
      });
  EXPECT_CALL(*connection, ListStates(_, _))
      .WillOnce([](const stubkit::OptionsView&, const ListBooksRequest&)
                    -> absl::StatusOr<::pages::v1::ListStatesResponse> {
        ::pages::v1::ListStatesResponse page;
        page.add_states(::pages::v1::ListStatesResponse::ACTIVE);
        return page;
      });
  PagesClient client(connection);
  ::pages::v1::ListLabelsRequest labels_request;
  labels_request.set_max_results(5);
  std::vector<std::pair<std::string, std::int64_t>> labels;
  for (auto& label : client.ListLabelsRange(labels_request)) {
    ASSERT_TRUE(label.ok());
    labels.push_back(*label);
  }
  EXPECT_EQ(labels,
            (std::vector<std::pair<std::string, std::int64_t>>{{"x", 7}}));
  std::vector<::pages::v1::ListStatesResponse_State> states;
  for (auto& state : client.ListStatesRange(ListBooksRequest{})) {
    ASSERT_TRUE(state.ok());
    states.push_back(*state);
  }
  EXPECT_EQ(states, (std::vector<::pages::v1::ListStatesResponse_State>{
                        ::pages::v1::ListStatesResponse::ACTIVE}));
}

#ifndef STUBKIT_NO_KEYWORDS_PROTO
// Items fields named with a C++98 keyword (protoc: mutable_delete_()), a
// C++11 one (mutable_nullptr_()), C++20 ones (protoc 3.21: mutable_requires(),
// mutable_co_await()), NULL (protoc: mutable_null()) and char8_t.
static_assert(
    std::is_same_v<decltype(std::declval<::keywords::v1::KeywordsClient&>()
                                .ListNullptrRange({})),
                   stubkit::PageRange<std::string>>);
static_assert(
    std::is_same_v<decltype(std::declval<::keywords::v1::KeywordsClient&>()
                                .ListCoAwaitRange({})),
                   stubkit::PageRange<std::pair<std::string, std::int64_t>>>);
static_assert(
    std::is_same_v<decltype(std::declval<::keywords::v1::KeywordsClient&>()
                                .ListNullRange({})),
                   stubkit::PageRange<std::int64_t>>);

TEST(ConventionsCompileTest, ItemsNamedWithKeywords) {
  using ::keywords::v1::KeywordRequest;
  auto connection =
      std::make_shared<::keywords::v1::stubkit_mocks::MockKeywordsConnection>();
  EXPECT_CALL(*connection, ListRequires(_, _))
      .WillRepeatedly(
          [](const stubkit::OptionsView&, const KeywordRequest& request)
              -> absl::StatusOr<::keywords::v1::ListRequiresResponse> {
            ::keywords::v1::ListRequiresResponse page;
            page.add_requires()->set_name("r" + request.page_token());
            if (request.page_token().empty()) page.set_next_page_token("2");
            return page;
          });
  EXPECT_CALL(*connection, ListDelete(_, _))
      .WillRepeatedly(
          [](const stubkit::OptionsView&, const KeywordRequest&)
              -> absl::StatusOr<::keywords::v1::ListDeleteResponse> {
            ::keywords::v1::ListDeleteResponse page;
            page.add_delete_()->set_name("d");
            return page;
          });
  ::keywords::v1::KeywordsClient client(connection);
  std::vector<std::string> names;
  for (const auto& thing : client.ListRequiresRange(KeywordRequest{})) {
    ASSERT_TRUE(thing.ok()) << thing.status();
    names.push_back(thing->name());
  }
  for (const auto& thing : client.ListDeleteRange(KeywordRequest{})) {
    ASSERT_TRUE(thing.ok()) << thing.status();
    names.push_back(thing->name());
  }
  EXPECT_EQ(names, (std::vector<std::string>{"r", "r2", "d"}));
}

#endif  // STUBKIT_NO_KEYWORDS_PROTO

TEST(ConventionsCompileTest, RoutedServiceCanBeBuilt) {
  ::routing::v1::RoutedClient client(
      std::make_shared<::routing::v1::stubkit_mocks::MockRoutedConnection>(),
      stubkit::Options{}.set<stubkit::RoutingHeaderOption>(false));
  (void)client;
  SUCCEED();
}

}  // namespace
