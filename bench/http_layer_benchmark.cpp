// Cost of the server's own layers per request: routing, serialising, recording metrics.
#include "api/metrics.h"
#include "api/router.h"
#include "api/wire.h"

#include <benchmark/benchmark.h>

namespace gpurent::http {
namespace {

Router make_router() {
  Router r;
  auto ok = [](const Request&, const Principal&) { return Response{}; };
  for (const char* p : {"/healthz", "/readyz", "/metrics", "/v1/openapi.json", "/v1/me",
                        "/v1/rentals", "/v1/rentals/{id}", "/v1/rentals/{id}/events",
                        "/v1/admin/nodes/{id}", "/v1/admin/nodes/{id}/topology"}) {
    r.add({.method = Method::kGet, .pattern = p, .handler = ok});
  }
  return r;
}

void BM_RouteExact(benchmark::State& state) {
  Router r = make_router();
  for (auto _ : state) benchmark::DoNotOptimize(r.match(Method::kGet, "/healthz"));
}
BENCHMARK(BM_RouteExact);

void BM_RouteWithParameter(benchmark::State& state) {
  Router r = make_router();
  for (auto _ : state) {
    benchmark::DoNotOptimize(
        r.match(Method::kGet, "/v1/rentals/rnt_0123456789abcdefghijkl/events"));
  }
}
BENCHMARK(BM_RouteWithParameter);

void BM_SerializeSharedBody(benchmark::State& state) {
  Response resp;
  resp.shared_body = std::make_shared<const std::string>(1500, 'x');
  resp.set_header("Cache-Control", "public, max-age=60");
  std::string out;
  for (auto _ : state) {
    out.clear();
    serialize_response(resp, "req_0123456789abcdef", true, false, out);
    benchmark::DoNotOptimize(out.data());
  }
}
BENCHMARK(BM_SerializeSharedBody);

void BM_MetricsRecord(benchmark::State& state) {
  Metrics m({"/healthz", "/readyz"});
  for (auto _ : state) m.record(0, "GET", 200, std::chrono::microseconds(150));
}
BENCHMARK(BM_MetricsRecord)->Threads(1)->Threads(2);

}  // namespace
}  // namespace gpurent::http
