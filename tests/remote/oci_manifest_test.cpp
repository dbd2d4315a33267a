// parse_pack_manifest (src/remote/oci.hpp) on what a registry may hand back: the manifest
// packfs push writes (a pack layer, then one layer per base), older ones (a pack layer alone),
// and hostile ones (base layers malformed, missing annotations, wrong types, the same base
// twice): a clear EINVAL naming the layer, never a crash.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "remote/oci.hpp"

namespace packfs::remote {
namespace {

using Json = nlohmann::json;

const std::string kBlobA = "sha256:" + std::string(64, 'a');
const std::string kBlobB = "sha256:" + std::string(64, 'b');
const std::string kBlobC = "sha256:" + std::string(64, 'c');
const std::string kImage1 = std::string(64, '1');
const std::string kImage2 = std::string(64, '2');
const std::string kImage3 = std::string(64, '3');

OciReference reference() {
    OciReference ref;
    ref.registry = "127.0.0.1:5000";
    ref.repository = "team/tree";
    ref.tag = "v2";
    return ref;
}

Json layer(std::string_view type, const std::string& blob, uint64_t size,
           const std::string& image, const std::string& title) {
    return {{"mediaType", type},
            {"digest", blob},
            {"size", size},
            {"annotations",
             {{std::string(kImageDigestAnnotation), image},
              {std::string(kTitleAnnotation), title}}}};
}

Json manifest(Json layers) {
    return {{"schemaVersion", 2},
            {"mediaType", "application/vnd.oci.image.manifest.v1+json"},
            {"layers", std::move(layers)}};
}

// The manifest packfs push writes for v2.pack over v0.pack and v1.pack.
Json pushed() {
    return manifest(Json::array({layer(kPackMediaType, kBlobC, 300, kImage3, "v2.pack"),
                                 layer(kBaseMediaType, kBlobA, 100, kImage1, "v0.pack"),
                                 layer(kBaseMediaType, kBlobB, 200, kImage2, "v1.pack")}));
}

// What parsing `m` fails with ("" when it parses).
std::string failure(const Json& m) {
    auto parsed = parse_pack_manifest(m.dump(), reference());
    if (parsed) return {};
    EXPECT_EQ(parsed.error().code(), EINVAL) << parsed.error().message();
    return parsed.error().message();
}

TEST(OciManifest, APackLayerAloneHasNoBases) {
    const Json m = manifest(Json::array({layer(kPackMediaType, kBlobC, 300, kImage3, "p.pack")}));
    auto parsed = parse_pack_manifest(m.dump(), reference());
    ASSERT_TRUE(parsed) << parsed.error().message();
    EXPECT_EQ(parsed->blob_digest, kBlobC);
    EXPECT_EQ(parsed->size, 300u);
    EXPECT_EQ(parsed->image_digest, kImage3);
    EXPECT_EQ(parsed->title, "p.pack");
    EXPECT_EQ(parsed->blob_url, "http://127.0.0.1:5000/v2/team/tree/blobs/" + kBlobC);
    EXPECT_TRUE(parsed->bases.empty());
}

TEST(OciManifest, BaseLayersAreReadInOrderWithTheirBlobsAndNames) {
    auto parsed = parse_pack_manifest(pushed().dump(), reference());
    ASSERT_TRUE(parsed) << parsed.error().message();
    EXPECT_EQ(parsed->image_digest, kImage3);
    ASSERT_EQ(parsed->bases.size(), 2u);
    EXPECT_EQ(parsed->bases[0].image_digest, kImage1);
    EXPECT_EQ(parsed->bases[0].title, "v0.pack");
    EXPECT_EQ(parsed->bases[0].blob_digest, kBlobA);
    EXPECT_EQ(parsed->bases[0].size, 100u);
    EXPECT_EQ(parsed->bases[0].blob_url, "http://127.0.0.1:5000/v2/team/tree/blobs/" + kBlobA);
    EXPECT_EQ(parsed->bases[1].image_digest, kImage2);
    ASSERT_NE(parsed->base(kImage2), nullptr);
    EXPECT_EQ(parsed->base(kImage2)->blob_digest, kBlobB);
    EXPECT_EQ(parsed->base(kImage3), nullptr) << "the pack itself is no base";
}

TEST(OciManifest, TheFirstPackLayerIsThePackWhereverTheBasesAre) {
    // A reader takes the first layer of the pack's media type, so a base listed before it (by
    // another writer) is still a base, and a second pack layer is ignored as before.
    Json m = manifest(Json::array({layer(kBaseMediaType, kBlobA, 100, kImage1, "v0.pack"),
                                   layer(kPackMediaType, kBlobC, 300, kImage3, "v2.pack"),
                                   layer(kPackMediaType, kBlobB, 200, kImage2, "other.pack")}));
    auto parsed = parse_pack_manifest(m.dump(), reference());
    ASSERT_TRUE(parsed) << parsed.error().message();
    EXPECT_EQ(parsed->image_digest, kImage3);
    ASSERT_EQ(parsed->bases.size(), 1u);
    EXPECT_EQ(parsed->bases[0].image_digest, kImage1);
}

TEST(OciManifest, OtherLayersAreIgnored) {
    Json m = pushed();
    m["layers"].push_back({{"mediaType", "text/plain"}, {"digest", "nonsense"}});
    m["layers"].push_back(42);
    m["layers"].push_back(nullptr);
    auto parsed = parse_pack_manifest(m.dump(), reference());
    ASSERT_TRUE(parsed) << parsed.error().message();
    EXPECT_EQ(parsed->bases.size(), 2u);
}

TEST(OciManifest, AMalformedBaseLayerIsRefusedNamingIt) {
    const auto with_base = [](Json base) {
        Json m = pushed();
        m["layers"][2] = std::move(base);
        return m;
    };
    Json base = pushed()["layers"][2];
    Json bad = base;
    bad.erase("digest");
    const std::string why = failure(with_base(bad));
    EXPECT_NE(why.find("layer 2, a base"), std::string::npos) << why;
    EXPECT_NE(why.find("blob digest"), std::string::npos) << why;
    bad = base;
    bad["digest"] = "sha256:XYZ";
    EXPECT_NE(failure(with_base(bad)).find("blob digest"), std::string::npos);
    bad["digest"] = 7;
    EXPECT_NE(failure(with_base(bad)).find("blob digest"), std::string::npos);
    bad = base;
    bad.erase("size");
    EXPECT_NE(failure(with_base(bad)).find("no size"), std::string::npos);
    for (Json size : {Json(-1), Json(1.5), Json("200"), Json(nullptr)}) {
        bad["size"] = size;
        EXPECT_NE(failure(with_base(bad)).find("no size"), std::string::npos) << size.dump();
    }
    bad = base;
    bad.erase("annotations");
    EXPECT_NE(failure(with_base(bad)).find("image digest"), std::string::npos);
    bad["annotations"] = "not an object";
    EXPECT_NE(failure(with_base(bad)).find("annotations"), std::string::npos);
    bad["annotations"] = Json::array({1, 2});
    EXPECT_NE(failure(with_base(bad)).find("annotations"), std::string::npos);
    for (Json image : {Json(std::string(63, '1')), Json(std::string(64, 'G')), Json(12),
                       Json("sha256:" + kImage2)}) {
        bad = base;
        bad["annotations"][std::string(kImageDigestAnnotation)] = image;
        EXPECT_NE(failure(with_base(bad)).find("image digest"), std::string::npos)
            << image.dump();
    }
    bad = base;
    bad["annotations"][std::string(kTitleAnnotation)] = Json::object();
    EXPECT_NE(failure(with_base(bad)).find("title"), std::string::npos);
}

TEST(OciManifest, ABaseWithoutATitleIsStillABase) {
    Json m = pushed();
    m["layers"][1]["annotations"].erase(std::string(kTitleAnnotation));
    auto parsed = parse_pack_manifest(m.dump(), reference());
    ASSERT_TRUE(parsed) << parsed.error().message();
    EXPECT_EQ(parsed->bases[0].title, "");
}

TEST(OciManifest, TheSameBaseTwiceIsRefused) {
    Json m = pushed();
    m["layers"][2]["annotations"][std::string(kImageDigestAnnotation)] = kImage1;
    const std::string why = failure(m);
    EXPECT_NE(why.find("twice"), std::string::npos) << why;
    EXPECT_NE(why.find(kImage1), std::string::npos) << why;
}

TEST(OciManifest, AMalformedPackLayerIsRefusedAsBefore) {
    Json m = pushed();
    m["layers"][0].erase("size");
    EXPECT_NE(failure(m).find("pack layer"), std::string::npos);
    m = pushed();
    m["layers"].erase(0);
    EXPECT_NE(failure(m).find("no layer of media type"), std::string::npos)
        << "bases alone are no pack";
    EXPECT_NE(failure(Json::array()).find("no layers"), std::string::npos);
    EXPECT_NE(failure(Json{{"layers", Json::object()}}).find("no layers"), std::string::npos);
}

TEST(OciManifest, BytesThatAreNoJsonAreRefused) {
    for (std::string_view body :
         {std::string_view(""), std::string_view("{"), std::string_view("\xff\xfe"),
          std::string_view("{\"layers\": [{\"mediaType\": \"application/vnd.packfs.pack.base.v2\""),
          std::string_view("null")}) {
        auto parsed = parse_pack_manifest(body, reference());
        ASSERT_FALSE(parsed) << body;
        EXPECT_EQ(parsed.error().code(), EINVAL);
    }
}

}  // namespace
}  // namespace packfs::remote
