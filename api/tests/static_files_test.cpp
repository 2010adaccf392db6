// Tests StaticFiles: what gets loaded, content types, caching headers, and that no request
// path reaches outside the loaded set.
#include "api/static_files.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace gpurent::http {
namespace static_files_test {

namespace fs = std::filesystem;
using testing::HasSubstr;
using testing::Not;

class IfNoneMatch final : public HeaderSource {
 public:
  explicit IfNoneMatch(std::string etag) : etag_(std::move(etag)) {}
  std::string_view get(std::string_view name) const override {
    return name == "If-None-Match" ? std::string_view(etag_) : std::string_view();
  }

 private:
  std::string etag_;
};

std::string header(const Response& r, std::string_view name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

void write(const fs::path& p, const std::string& content) {
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

class StaticFilesTest : public testing::Test {
 protected:
  static void SetUpTestSuite() {
    base_ = fs::temp_directory_path() / ("gpurent_static_test_" + std::to_string(getpid()));
    fs::remove_all(base_);
    root_ = base_ / "web";
    write(root_ / "index.html", "<!doctype html><title>gpurent</title>");
    write(root_ / "app.js", "console.log('hi');");
    write(root_ / "style.css", "body{}");
    write(root_ / "data.json", "{}");
    write(root_ / "logo.svg", "<svg/>");
    write(root_ / "img.png", std::string("\x89PNG\r\n\x1a\n\0\0", 10));
    write(root_ / "font.woff2", "wOF2");
    write(root_ / "notes.txt", "notes");
    write(root_ / "blob.bin", "blob");
    write(root_ / "sub" / "page.html", "<p>page</p>");
    write(root_ / "sub" / "deep" / "x.js", "x();");
    write(root_ / ".env", "SECRET=1");
    write(root_ / ".git" / "config", "[core]");
    write(root_ / "sub" / ".hidden", "hidden");
    write(root_ / "sub" / ".hiddendir" / "in.js", "hidden();");
    write(base_ / "outside" / "secret.txt", "outside secret");
    fs::create_symlink("/etc/passwd", root_ / "passwd");
    fs::create_symlink(base_ / "outside" / "secret.txt", root_ / "secret.txt");
    fs::create_directory_symlink(base_ / "outside", root_ / "linkdir");
    files_ = new StaticFiles(root_.string());
  }
  static void TearDownTestSuite() {
    delete files_;
    files_ = nullptr;
    fs::remove_all(base_);
  }

  static std::optional<Response> get(std::string_view path, Method method = Method::kGet,
                                     const HeaderSource* headers = nullptr) {
    Request r;
    r.method = method;
    r.path = path;
    r.target = path;
    r.headers = headers;
    return files_->serve(r);
  }

  static inline fs::path base_, root_;
  static inline StaticFiles* files_ = nullptr;
};

TEST_F(StaticFilesTest, LoadsOnlyRegularVisibleFiles) {
  // index.html app.js style.css data.json logo.svg img.png font.woff2 notes.txt blob.bin
  // sub/page.html sub/deep/x.js
  EXPECT_EQ(files_->size(), 11u);
}

TEST_F(StaticFilesTest, RootServesIndexHtml) {
  auto r = get("/");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body_view(), "<!doctype html><title>gpurent</title>");
  EXPECT_EQ(r->content_type, "text/html; charset=utf-8");
  auto direct = get("/index.html");
  ASSERT_TRUE(direct);
  EXPECT_EQ(direct->body_view(), r->body_view());
}

TEST_F(StaticFilesTest, ServesNestedFiles) {
  auto page = get("/sub/page.html");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->body_view(), "<p>page</p>");
  auto deep = get("/sub/deep/x.js");
  ASSERT_TRUE(deep);
  EXPECT_EQ(deep->body_view(), "x();");
}

TEST_F(StaticFilesTest, BinaryContentIsExact) {
  auto r = get("/img.png");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body_view(), std::string_view("\x89PNG\r\n\x1a\n\0\0", 10));
}

TEST_F(StaticFilesTest, ContentTypes) {
  const std::pair<const char*, const char*> cases[] = {
      {"/app.js", "text/javascript; charset=utf-8"},
      {"/style.css", "text/css; charset=utf-8"},
      {"/data.json", "application/json"},
      {"/logo.svg", "image/svg+xml"},
      {"/img.png", "image/png"},
      {"/font.woff2", "font/woff2"},
      {"/notes.txt", "text/plain; charset=utf-8"},
      {"/blob.bin", "application/octet-stream"},
      {"/sub/page.html", "text/html; charset=utf-8"},
  };
  for (const auto& [path, type] : cases) {
    auto r = get(path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->content_type, type) << path;
    EXPECT_EQ(header(*r, "X-Content-Type-Options"), "nosniff") << path;
  }
}

TEST(StaticFiles, ContentTypeForByExtension) {
  EXPECT_EQ(StaticFiles::content_type_for("a.mjs"), "text/javascript; charset=utf-8");
  EXPECT_EQ(StaticFiles::content_type_for("a.js.map"), "application/json");
  EXPECT_EQ(StaticFiles::content_type_for("favicon.ico"), "image/x-icon");
  EXPECT_EQ(StaticFiles::content_type_for("photo.jpg"), "image/jpeg");
  EXPECT_EQ(StaticFiles::content_type_for("site.webmanifest"), "application/manifest+json");
  EXPECT_EQ(StaticFiles::content_type_for("README"), "application/octet-stream");
  EXPECT_EQ(StaticFiles::content_type_for("html"), "application/octet-stream");
}

TEST_F(StaticFilesTest, CacheControl) {
  EXPECT_EQ(header(*get("/"), "Cache-Control"), "no-cache");
  EXPECT_EQ(header(*get("/sub/page.html"), "Cache-Control"), "no-cache");
  // Plain paths are revalidated: only the release's names may be kept (ReleaseNames...).
  EXPECT_EQ(header(*get("/app.js"), "Cache-Control"), "no-cache");
  EXPECT_EQ(header(*get("/img.png"), "Cache-Control"), "no-cache");
}

TEST_F(StaticFilesTest, HtmlCarriesSecurityHeaders) {
  auto html = *get("/");
  EXPECT_THAT(header(html, "Content-Security-Policy"), HasSubstr("default-src 'self'"));
  EXPECT_EQ(header(html, "X-Frame-Options"), "DENY");
  auto js = *get("/app.js");
  EXPECT_EQ(header(js, "Content-Security-Policy"), "");
}

TEST_F(StaticFilesTest, ETagIsQuotedAndFollowsContent) {
  std::string index = header(*get("/index.html"), "ETag");
  std::string js = header(*get("/app.js"), "ETag");
  ASSERT_GE(index.size(), 3u);
  EXPECT_EQ(index.front(), '"');
  EXPECT_EQ(index.back(), '"');
  EXPECT_NE(index, js);
  EXPECT_EQ(header(*get("/"), "ETag"), index);
}

TEST_F(StaticFilesTest, IfNoneMatchGives304WithoutBody) {
  std::string etag = header(*get("/app.js"), "ETag");
  IfNoneMatch match(etag);
  auto r = get("/app.js", Method::kGet, &match);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 304);
  EXPECT_EQ(r->body_view(), "");
  EXPECT_EQ(header(*r, "ETag"), etag);
  EXPECT_EQ(header(*r, "Cache-Control"), "no-cache");
}

TEST_F(StaticFilesTest, StaleETagGetsTheFile) {
  IfNoneMatch stale("\"0000000000\"");
  auto r = get("/app.js", Method::kGet, &stale);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->body_view(), "console.log('hi');");
  // Another file's ETag does not match either.
  IfNoneMatch other(header(*get("/index.html"), "ETag"));
  EXPECT_EQ(get("/app.js", Method::kGet, &other)->status, 200);
}

TEST_F(StaticFilesTest, HeadIsServed) {
  auto r = get("/app.js", Method::kHead);
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
}

TEST_F(StaticFilesTest, OtherMethodsAreNotServed) {
  for (auto m : {Method::kPost, Method::kPut, Method::kDelete, Method::kPatch, Method::kOptions,
                 Method::kOther}) {
    EXPECT_FALSE(get("/index.html", m)) << method_name(m);
  }
}

TEST_F(StaticFilesTest, DotfilesAreNotServed) {
  for (std::string_view path : {"/.env", "/.git/config", "/sub/.hidden", "/sub/.hiddendir/in.js"}) {
    EXPECT_FALSE(get(path)) << path;
  }
}

TEST_F(StaticFilesTest, SymlinksAreNotServed) {
  for (std::string_view path : {"/passwd", "/secret.txt", "/linkdir/secret.txt", "/linkdir"}) {
    EXPECT_FALSE(get(path)) << path;
  }
}

TEST_F(StaticFilesTest, TraversalNeverLeavesTheRoot) {
  const std::string paths[] = {
      "/../etc/passwd",
      "/../../../../etc/passwd",
      "/%2e%2e/x",
      "/%2e%2e/%2e%2e/etc/passwd",
      "/%2E%2E%2Fetc%2Fpasswd",
      "/..%2f..%2fetc/passwd",
      "/sub/../index.html",
      "/sub/./page.html",
      "/./index.html",
      "//etc/passwd",
      "//index.html",
      "/sub//page.html",
      "/..\\..\\etc\\passwd",
      "/sub\\page.html",
      "\\index.html",
      std::string("/index.html\0", 12),
      std::string("/index.html\0.png", 16),
      "/index.html%00",
      "/etc/passwd",
      "/web/index.html",
      "/../web/index.html",
      "/../outside/secret.txt",
      "index.html",
      "",
      "/INDEX.HTML",
      "/index.html/",
      "/sub/",
      "/sub",
      "/index.html?x=1",
  };
  for (const auto& path : paths) {
    auto r = get(path);
    EXPECT_FALSE(r) << "served " << path;
    if (r) {
      EXPECT_THAT(std::string(r->body_view()), Not(HasSubstr("root:")));
    }
  }
}

TEST(StaticFiles, MissingRootServesNothing) {
  StaticFiles files("/nonexistent/gpurent-web-root");
  EXPECT_EQ(files.size(), 0u);
  Request r;
  r.path = "/";
  EXPECT_FALSE(files.serve(r));
}

TEST(StaticFiles, RootThatIsAFileServesNothing) {
  StaticFiles files("/etc/passwd");
  EXPECT_EQ(files.size(), 0u);
}

// A panel whose HTML names its script and style sheet, as web/public/index.html does.
class ReleaseTest : public testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("gpurent_release_test_" + std::to_string(getpid()));
    fs::remove_all(root_);
    write(root_ / "index.html",
          "<link href=\"/style.css\"><script type=\"module\" src=\"/js/app.js\"></script>"
          "<a href=\"/js/app.jsx\">not an asset</a>");
    write(root_ / "style.css", "body{}");
    write(root_ / "js" / "app.js", "import './pages/a.js';");
    write(root_ / "js" / "pages" / "a.js", "a();");
  }
  void TearDown() override { fs::remove_all(root_); }

  static std::optional<Response> get(const StaticFiles& files, std::string_view path) {
    Request r;
    r.method = Method::kGet;
    r.path = path;
    r.target = path;
    return files.serve(r);
  }

  fs::path root_;
};

TEST_F(ReleaseTest, HtmlNamesTheReleaseWhoseFilesAreImmutable) {
  StaticFiles files(root_.string());
  const std::string prefix = "/r/" + files.release();
  ASSERT_EQ(files.release().size(), 12u);
  auto index = get(files, "/");
  ASSERT_TRUE(index);
  EXPECT_EQ(index->body_view(),
            "<link href=\"" + prefix + "/style.css\"><script type=\"module\" src=\"" + prefix +
                "/js/app.js\"></script><a href=\"/js/app.jsx\">not an asset</a>");
  EXPECT_EQ(header(*index, "Cache-Control"), "no-cache");
  // The module and what it imports relatively, under the same release.
  for (const char* path : {"/js/app.js", "/js/pages/a.js", "/style.css"}) {
    auto r = get(files, prefix + path);
    ASSERT_TRUE(r) << path;
    EXPECT_EQ(r->status, 200);
    EXPECT_EQ(header(*r, "Cache-Control"), "public, max-age=31536000, immutable") << path;
    EXPECT_EQ(r->body_view(), get(files, path)->body_view());
  }
  EXPECT_FALSE(get(files, prefix + "/missing.js"));
  EXPECT_FALSE(get(files, "/r/" + files.release()));
  EXPECT_FALSE(get(files, prefix + "/../index.html"));
}

TEST_F(ReleaseTest, AnotherReleasesNameGetsTodaysFileRevalidated) {
  StaticFiles files(root_.string());
  auto r = get(files, "/r/000000000000/js/app.js");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->body_view(), "import './pages/a.js';");
  EXPECT_EQ(header(*r, "Cache-Control"), "no-cache");
}

TEST_F(ReleaseTest, ChangingAnyFileButHtmlMakesANewRelease) {
  const std::string first = StaticFiles(root_.string()).release();
  EXPECT_EQ(StaticFiles(root_.string()).release(), first);
  write(root_ / "index.html", "<p>other</p>");
  EXPECT_EQ(StaticFiles(root_.string()).release(), first);
  write(root_ / "js" / "pages" / "a.js", "b();");
  EXPECT_NE(StaticFiles(root_.string()).release(), first);
}

}  // namespace static_files_test
}  // namespace gpurent::http
