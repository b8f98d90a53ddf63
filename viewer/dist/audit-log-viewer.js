var D=globalThis,L=D.ShadowRoot&&(D.ShadyCSS===void 0||D.ShadyCSS.nativeShadow)&&"adoptedStyleSheets"in Document.prototype&&"replace"in CSSStyleSheet.prototype,Z=Symbol(),pe=new WeakMap,M=class{constructor(e,t,s){if(this._$cssResult$=!0,s!==Z)throw Error("CSSResult is not constructable. Use `unsafeCSS` or `css` instead.");this.cssText=e,this.t=t}get styleSheet(){let e=this.o,t=this.t;if(L&&e===void 0){let s=t!==void 0&&t.length===1;s&&(e=pe.get(t)),e===void 0&&((this.o=e=new CSSStyleSheet).replaceSync(this.cssText),s&&pe.set(t,e))}return e}toString(){return this.cssText}},fe=r=>new M(typeof r=="string"?r:r+"",void 0,Z),Q=(r,...e)=>{let t=r.length===1?r[0]:e.reduce((s,i,n)=>s+(o=>{if(o._$cssResult$===!0)return o.cssText;if(typeof o=="number")return o;throw Error("Value passed to 'css' function must be a 'css' function result: "+o+". Use 'unsafeCSS' to pass non-literal values, but take care to ensure page security.")})(i)+r[n+1],r[0]);return new M(t,r,Z)},me=(r,e)=>{if(L)r.adoptedStyleSheets=e.map(t=>t instanceof CSSStyleSheet?t:t.styleSheet);else for(let t of e){let s=document.createElement("style"),i=D.litNonce;i!==void 0&&s.setAttribute("nonce",i),s.textContent=t.cssText,r.appendChild(s)}},ee=L?r=>r:r=>r instanceof CSSStyleSheet?(e=>{let t="";for(let s of e.cssRules)t+=s.cssText;return fe(t)})(r):r;var{is:We,defineProperty:Je,getOwnPropertyDescriptor:Ke,getOwnPropertyNames:Ge,getOwnPropertySymbols:Xe,getPrototypeOf:Ye}=Object,j=globalThis,ge=j.trustedTypes,Ze=ge?ge.emptyScript:"",Qe=j.reactiveElementPolyfillSupport,U=(r,e)=>r,te={toAttribute(r,e){switch(e){case Boolean:r=r?Ze:null;break;case Object:case Array:r=r==null?r:JSON.stringify(r)}return r},fromAttribute(r,e){let t=r;switch(e){case Boolean:t=r!==null;break;case Number:t=r===null?null:Number(r);break;case Object:case Array:try{t=JSON.parse(r)}catch{t=null}}return t}},ye=(r,e)=>!We(r,e),$e={attribute:!0,type:String,converter:te,reflect:!1,useDefault:!1,hasChanged:ye};Symbol.metadata??=Symbol("metadata"),j.litPropertyMetadata??=new WeakMap;var y=class extends HTMLElement{static addInitializer(e){this._$Ei(),(this.l??=[]).push(e)}static get observedAttributes(){return this.finalize(),this._$Eh&&[...this._$Eh.keys()]}static createProperty(e,t=$e){if(t.state&&(t.attribute=!1),this._$Ei(),this.prototype.hasOwnProperty(e)&&((t=Object.create(t)).wrapped=!0),this.elementProperties.set(e,t),!t.noAccessor){let s=Symbol(),i=this.getPropertyDescriptor(e,s,t);i!==void 0&&Je(this.prototype,e,i)}}static getPropertyDescriptor(e,t,s){let{get:i,set:n}=Ke(this.prototype,e)??{get(){return this[t]},set(o){this[t]=o}};return{get:i,set(o){let d=i?.call(this);n?.call(this,o),this.requestUpdate(e,d,s)},configurable:!0,enumerable:!0}}static getPropertyOptions(e){return this.elementProperties.get(e)??$e}static _$Ei(){if(this.hasOwnProperty(U("elementProperties")))return;let e=Ye(this);e.finalize(),e.l!==void 0&&(this.l=[...e.l]),this.elementProperties=new Map(e.elementProperties)}static finalize(){if(this.hasOwnProperty(U("finalized")))return;if(this.finalized=!0,this._$Ei(),this.hasOwnProperty(U("properties"))){let t=this.properties,s=[...Ge(t),...Xe(t)];for(let i of s)this.createProperty(i,t[i])}let e=this[Symbol.metadata];if(e!==null){let t=litPropertyMetadata.get(e);if(t!==void 0)for(let[s,i]of t)this.elementProperties.set(s,i)}this._$Eh=new Map;for(let[t,s]of this.elementProperties){let i=this._$Eu(t,s);i!==void 0&&this._$Eh.set(i,t)}this.elementStyles=this.finalizeStyles(this.styles)}static finalizeStyles(e){let t=[];if(Array.isArray(e)){let s=new Set(e.flat(1/0).reverse());for(let i of s)t.unshift(ee(i))}else e!==void 0&&t.push(ee(e));return t}static _$Eu(e,t){let s=t.attribute;return s===!1?void 0:typeof s=="string"?s:typeof e=="string"?e.toLowerCase():void 0}constructor(){super(),this._$Ep=void 0,this.isUpdatePending=!1,this.hasUpdated=!1,this._$Em=null,this._$Ev()}_$Ev(){this._$ES=new Promise(e=>this.enableUpdating=e),this._$AL=new Map,this._$E_(),this.requestUpdate(),this.constructor.l?.forEach(e=>e(this))}addController(e){(this._$EO??=new Set).add(e),this.renderRoot!==void 0&&this.isConnected&&e.hostConnected?.()}removeController(e){this._$EO?.delete(e)}_$E_(){let e=new Map,t=this.constructor.elementProperties;for(let s of t.keys())this.hasOwnProperty(s)&&(e.set(s,this[s]),delete this[s]);e.size>0&&(this._$Ep=e)}createRenderRoot(){let e=this.shadowRoot??this.attachShadow(this.constructor.shadowRootOptions);return me(e,this.constructor.elementStyles),e}connectedCallback(){this.renderRoot??=this.createRenderRoot(),this.enableUpdating(!0),this._$EO?.forEach(e=>e.hostConnected?.())}enableUpdating(e){}disconnectedCallback(){this._$EO?.forEach(e=>e.hostDisconnected?.())}attributeChangedCallback(e,t,s){this._$AK(e,s)}_$ET(e,t){let s=this.constructor.elementProperties.get(e),i=this.constructor._$Eu(e,s);if(i!==void 0&&s.reflect===!0){let n=(s.converter?.toAttribute!==void 0?s.converter:te).toAttribute(t,s.type);this._$Em=e,n==null?this.removeAttribute(i):this.setAttribute(i,n),this._$Em=null}}_$AK(e,t){let s=this.constructor,i=s._$Eh.get(e);if(i!==void 0&&this._$Em!==i){let n=s.getPropertyOptions(i),o=typeof n.converter=="function"?{fromAttribute:n.converter}:n.converter?.fromAttribute!==void 0?n.converter:te;this._$Em=i;let d=o.fromAttribute(t,n.type);this[i]=d??this._$Ej?.get(i)??d,this._$Em=null}}requestUpdate(e,t,s,i=!1,n){if(e!==void 0){let o=this.constructor;if(i===!1&&(n=this[e]),s??=o.getPropertyOptions(e),!((s.hasChanged??ye)(n,t)||s.useDefault&&s.reflect&&n===this._$Ej?.get(e)&&!this.hasAttribute(o._$Eu(e,s))))return;this.C(e,t,s)}this.isUpdatePending===!1&&(this._$ES=this._$EP())}C(e,t,{useDefault:s,reflect:i,wrapped:n},o){s&&!(this._$Ej??=new Map).has(e)&&(this._$Ej.set(e,o??t??this[e]),n!==!0||o!==void 0)||(this._$AL.has(e)||(this.hasUpdated||s||(t=void 0),this._$AL.set(e,t)),i===!0&&this._$Em!==e&&(this._$Eq??=new Set).add(e))}async _$EP(){this.isUpdatePending=!0;try{await this._$ES}catch(t){Promise.reject(t)}let e=this.scheduleUpdate();return e!=null&&await e,!this.isUpdatePending}scheduleUpdate(){return this.performUpdate()}performUpdate(){if(!this.isUpdatePending)return;if(!this.hasUpdated){if(this.renderRoot??=this.createRenderRoot(),this._$Ep){for(let[i,n]of this._$Ep)this[i]=n;this._$Ep=void 0}let s=this.constructor.elementProperties;if(s.size>0)for(let[i,n]of s){let{wrapped:o}=n,d=this[i];o!==!0||this._$AL.has(i)||d===void 0||this.C(i,void 0,n,d)}}let e=!1,t=this._$AL;try{e=this.shouldUpdate(t),e?(this.willUpdate(t),this._$EO?.forEach(s=>s.hostUpdate?.()),this.update(t)):this._$EM()}catch(s){throw e=!1,this._$EM(),s}e&&this._$AE(t)}willUpdate(e){}_$AE(e){this._$EO?.forEach(t=>t.hostUpdated?.()),this.hasUpdated||(this.hasUpdated=!0,this.firstUpdated(e)),this.updated(e)}_$EM(){this._$AL=new Map,this.isUpdatePending=!1}get updateComplete(){return this.getUpdateComplete()}getUpdateComplete(){return this._$ES}shouldUpdate(e){return!0}update(e){this._$Eq&&=this._$Eq.forEach(t=>this._$ET(t,this[t])),this._$EM()}updated(e){}firstUpdated(e){}};y.elementStyles=[],y.shadowRootOptions={mode:"open"},y[U("elementProperties")]=new Map,y[U("finalized")]=new Map,Qe?.({ReactiveElement:y}),(j.reactiveElementVersions??=[]).push("2.1.2");var re=globalThis,ve=r=>r,z=re.trustedTypes,be=z?z.createPolicy("lit-html",{createHTML:r=>r}):void 0,ie="$lit$",v=`lit$${Math.random().toFixed(9).slice(2)}$`,ne="?"+v,et=`<${ne}>`,w=document,N=()=>w.createComment(""),O=r=>r===null||typeof r!="object"&&typeof r!="function",oe=Array.isArray,Se=r=>oe(r)||typeof r?.[Symbol.iterator]=="function",se=`[ 	
\f\r]`,I=/<(?:(!--|\/[^a-zA-Z])|(\/?[a-zA-Z][^>\s]*)|(\/?$))/g,Ae=/-->/g,_e=/>/g,E=RegExp(`>|${se}(?:([^\\s"'>=/]+)(${se}*=${se}*(?:[^ 	
\f\r"'\`<>=]|("|')|))|$)`,"g"),Ee=/'/g,xe=/"/g,Te=/^(?:script|style|textarea|title)$/i,ae=r=>(e,...t)=>({_$litType$:r,strings:e,values:t}),g=ae(1),vt=ae(2),bt=ae(3),b=Symbol.for("lit-noChange"),f=Symbol.for("lit-nothing"),we=new WeakMap,x=w.createTreeWalker(w,129);function ke(r,e){if(!oe(r)||!r.hasOwnProperty("raw"))throw Error("invalid template strings array");return be!==void 0?be.createHTML(e):e}var Ce=(r,e)=>{let t=r.length-1,s=[],i,n=e===2?"<svg>":e===3?"<math>":"",o=I;for(let d=0;d<t;d++){let a=r[d],c,h,l=-1,p=0;for(;p<a.length&&(o.lastIndex=p,h=o.exec(a),h!==null);)p=o.lastIndex,o===I?h[1]==="!--"?o=Ae:h[1]!==void 0?o=_e:h[2]!==void 0?(Te.test(h[2])&&(i=RegExp("</"+h[2],"g")),o=E):h[3]!==void 0&&(o=E):o===E?h[0]===">"?(o=i??I,l=-1):h[1]===void 0?l=-2:(l=o.lastIndex-h[2].length,c=h[1],o=h[3]===void 0?E:h[3]==='"'?xe:Ee):o===xe||o===Ee?o=E:o===Ae||o===_e?o=I:(o=E,i=void 0);let u=o===E&&r[d+1].startsWith("/>")?" ":"";n+=o===I?a+et:l>=0?(s.push(c),a.slice(0,l)+ie+a.slice(l)+v+u):a+v+(l===-2?d:u)}return[ke(r,n+(r[t]||"<?>")+(e===2?"</svg>":e===3?"</math>":"")),s]},H=class r{constructor({strings:e,_$litType$:t},s){let i;this.parts=[];let n=0,o=0,d=e.length-1,a=this.parts,[c,h]=Ce(e,t);if(this.el=r.createElement(c,s),x.currentNode=this.el.content,t===2||t===3){let l=this.el.content.firstChild;l.replaceWith(...l.childNodes)}for(;(i=x.nextNode())!==null&&a.length<d;){if(i.nodeType===1){if(i.hasAttributes())for(let l of i.getAttributeNames())if(l.endsWith(ie)){let p=h[o++],u=i.getAttribute(l).split(v),m=/([.?@])?(.*)/.exec(p);a.push({type:1,index:n,name:m[2],strings:u,ctor:m[1]==="."?F:m[1]==="?"?V:m[1]==="@"?q:T}),i.removeAttribute(l)}else l.startsWith(v)&&(a.push({type:6,index:n}),i.removeAttribute(l));if(Te.test(i.tagName)){let l=i.textContent.split(v),p=l.length-1;if(p>0){i.textContent=z?z.emptyScript:"";for(let u=0;u<p;u++)i.append(l[u],N()),x.nextNode(),a.push({type:2,index:++n});i.append(l[p],N())}}}else if(i.nodeType===8)if(i.data===ne)a.push({type:2,index:n});else{let l=-1;for(;(l=i.data.indexOf(v,l+1))!==-1;)a.push({type:7,index:n}),l+=v.length-1}n++}}static createElement(e,t){let s=w.createElement("template");return s.innerHTML=e,s}};function S(r,e,t=r,s){if(e===b)return e;let i=s!==void 0?t._$Co?.[s]:t._$Cl,n=O(e)?void 0:e._$litDirective$;return i?.constructor!==n&&(i?._$AO?.(!1),n===void 0?i=void 0:(i=new n(r),i._$AT(r,t,s)),s!==void 0?(t._$Co??=[])[s]=i:t._$Cl=i),i!==void 0&&(e=S(r,i._$AS(r,e.values),i,s)),e}var B=class{constructor(e,t){this._$AV=[],this._$AN=void 0,this._$AD=e,this._$AM=t}get parentNode(){return this._$AM.parentNode}get _$AU(){return this._$AM._$AU}u(e){let{el:{content:t},parts:s}=this._$AD,i=(e?.creationScope??w).importNode(t,!0);x.currentNode=i;let n=x.nextNode(),o=0,d=0,a=s[0];for(;a!==void 0;){if(o===a.index){let c;a.type===2?c=new C(n,n.nextSibling,this,e):a.type===1?c=new a.ctor(n,a.name,a.strings,this,e):a.type===6&&(c=new W(n,this,e)),this._$AV.push(c),a=s[++d]}o!==a?.index&&(n=x.nextNode(),o++)}return x.currentNode=w,i}p(e){let t=0;for(let s of this._$AV)s!==void 0&&(s.strings!==void 0?(s._$AI(e,s,t),t+=s.strings.length-2):s._$AI(e[t])),t++}},C=class r{get _$AU(){return this._$AM?._$AU??this._$Cv}constructor(e,t,s,i){this.type=2,this._$AH=f,this._$AN=void 0,this._$AA=e,this._$AB=t,this._$AM=s,this.options=i,this._$Cv=i?.isConnected??!0}get parentNode(){let e=this._$AA.parentNode,t=this._$AM;return t!==void 0&&e?.nodeType===11&&(e=t.parentNode),e}get startNode(){return this._$AA}get endNode(){return this._$AB}_$AI(e,t=this){e=S(this,e,t),O(e)?e===f||e==null||e===""?(this._$AH!==f&&this._$AR(),this._$AH=f):e!==this._$AH&&e!==b&&this._(e):e._$litType$!==void 0?this.$(e):e.nodeType!==void 0?this.T(e):Se(e)?this.k(e):this._(e)}O(e){return this._$AA.parentNode.insertBefore(e,this._$AB)}T(e){this._$AH!==e&&(this._$AR(),this._$AH=this.O(e))}_(e){this._$AH!==f&&O(this._$AH)?this._$AA.nextSibling.data=e:this.T(w.createTextNode(e)),this._$AH=e}$(e){let{values:t,_$litType$:s}=e,i=typeof s=="number"?this._$AC(e):(s.el===void 0&&(s.el=H.createElement(ke(s.h,s.h[0]),this.options)),s);if(this._$AH?._$AD===i)this._$AH.p(t);else{let n=new B(i,this),o=n.u(this.options);n.p(t),this.T(o),this._$AH=n}}_$AC(e){let t=we.get(e.strings);return t===void 0&&we.set(e.strings,t=new H(e)),t}k(e){oe(this._$AH)||(this._$AH=[],this._$AR());let t=this._$AH,s,i=0;for(let n of e)i===t.length?t.push(s=new r(this.O(N()),this.O(N()),this,this.options)):s=t[i],s._$AI(n),i++;i<t.length&&(this._$AR(s&&s._$AB.nextSibling,i),t.length=i)}_$AR(e=this._$AA.nextSibling,t){for(this._$AP?.(!1,!0,t);e!==this._$AB;){let s=ve(e).nextSibling;ve(e).remove(),e=s}}setConnected(e){this._$AM===void 0&&(this._$Cv=e,this._$AP?.(e))}},T=class{get tagName(){return this.element.tagName}get _$AU(){return this._$AM._$AU}constructor(e,t,s,i,n){this.type=1,this._$AH=f,this._$AN=void 0,this.element=e,this.name=t,this._$AM=i,this.options=n,s.length>2||s[0]!==""||s[1]!==""?(this._$AH=Array(s.length-1).fill(new String),this.strings=s):this._$AH=f}_$AI(e,t=this,s,i){let n=this.strings,o=!1;if(n===void 0)e=S(this,e,t,0),o=!O(e)||e!==this._$AH&&e!==b,o&&(this._$AH=e);else{let d=e,a,c;for(e=n[0],a=0;a<n.length-1;a++)c=S(this,d[s+a],t,a),c===b&&(c=this._$AH[a]),o||=!O(c)||c!==this._$AH[a],c===f?e=f:e!==f&&(e+=(c??"")+n[a+1]),this._$AH[a]=c}o&&!i&&this.j(e)}j(e){e===f?this.element.removeAttribute(this.name):this.element.setAttribute(this.name,e??"")}},F=class extends T{constructor(){super(...arguments),this.type=3}j(e){this.element[this.name]=e===f?void 0:e}},V=class extends T{constructor(){super(...arguments),this.type=4}j(e){this.element.toggleAttribute(this.name,!!e&&e!==f)}},q=class extends T{constructor(e,t,s,i,n){super(e,t,s,i,n),this.type=5}_$AI(e,t=this){if((e=S(this,e,t,0)??f)===b)return;let s=this._$AH,i=e===f&&s!==f||e.capture!==s.capture||e.once!==s.once||e.passive!==s.passive,n=e!==f&&(s===f||i);i&&this.element.removeEventListener(this.name,this,s),n&&this.element.addEventListener(this.name,this,e),this._$AH=e}handleEvent(e){typeof this._$AH=="function"?this._$AH.call(this.options?.host??this.element,e):this._$AH.handleEvent(e)}},W=class{constructor(e,t,s){this.element=e,this.type=6,this._$AN=void 0,this._$AM=t,this.options=s}get _$AU(){return this._$AM._$AU}_$AI(e){S(this,e)}},Pe={M:ie,P:v,A:ne,C:1,L:Ce,R:B,D:Se,V:S,I:C,H:T,N:V,U:q,B:F,F:W},tt=re.litHtmlPolyfillSupport;tt?.(H,C),(re.litHtmlVersions??=[]).push("3.3.3");var Re=(r,e,t)=>{let s=t?.renderBefore??e,i=s._$litPart$;if(i===void 0){let n=t?.renderBefore??null;s._$litPart$=i=new C(e.insertBefore(N(),n),n,void 0,t??{})}return i._$AI(r),i};var le=globalThis,A=class extends y{constructor(){super(...arguments),this.renderOptions={host:this},this._$Do=void 0}createRenderRoot(){let e=super.createRenderRoot();return this.renderOptions.renderBefore??=e.firstChild,e}update(e){let t=this.render();this.hasUpdated||(this.renderOptions.isConnected=this.isConnected),super.update(e),this._$Do=Re(t,this.renderRoot,this.renderOptions)}connectedCallback(){super.connectedCallback(),this._$Do?.setConnected(!0)}disconnectedCallback(){super.disconnectedCallback(),this._$Do?.setConnected(!1)}render(){return b}};A._$litElement$=!0,A.finalized=!0,le.litElementHydrateSupport?.({LitElement:A});var st=le.litElementPolyfillSupport;st?.({LitElement:A});(le.litElementVersions??=[]).push("4.2.2");var Me={ATTRIBUTE:1,CHILD:2,PROPERTY:3,BOOLEAN_ATTRIBUTE:4,EVENT:5,ELEMENT:6},Ue=r=>(...e)=>({_$litDirective$:r,values:e}),J=class{constructor(e){}get _$AU(){return this._$AM._$AU}_$AT(e,t,s){this._$Ct=e,this._$AM=t,this._$Ci=s}_$AS(e,t){return this.update(e,t)}update(e,t){return this.render(...t)}};var{I:rt}=Pe,Ie=r=>r;var Ne=()=>document.createComment(""),P=(r,e,t)=>{let s=r._$AA.parentNode,i=e===void 0?r._$AB:e._$AA;if(t===void 0){let n=s.insertBefore(Ne(),i),o=s.insertBefore(Ne(),i);t=new rt(n,o,r,r.options)}else{let n=t._$AB.nextSibling,o=t._$AM,d=o!==r;if(d){let a;t._$AQ?.(r),t._$AM=r,t._$AP!==void 0&&(a=r._$AU)!==o._$AU&&t._$AP(a)}if(n!==i||d){let a=t._$AA;for(;a!==n;){let c=Ie(a).nextSibling;Ie(s).insertBefore(a,i),a=c}}}return t},_=(r,e,t=r)=>(r._$AI(e,t),r),it={},Oe=(r,e=it)=>r._$AH=e,He=r=>r._$AH,K=r=>{r._$AR(),r._$AA.remove()};var De=(r,e,t)=>{let s=new Map;for(let i=e;i<=t;i++)s.set(r[i],i);return s},Le=Ue(class extends J{constructor(r){if(super(r),r.type!==Me.CHILD)throw Error("repeat() can only be used in text expressions")}dt(r,e,t){let s;t===void 0?t=e:e!==void 0&&(s=e);let i=[],n=[],o=0;for(let d of r)i[o]=s?s(d,o):o,n[o]=t(d,o),o++;return{values:n,keys:i}}render(r,e,t){return this.dt(r,e,t).values}update(r,[e,t,s]){let i=He(r),{values:n,keys:o}=this.dt(e,t,s);if(!Array.isArray(i))return this.ut=o,n;let d=this.ut??=[],a=[],c,h,l=0,p=i.length-1,u=0,m=n.length-1;for(;l<=p&&u<=m;)if(i[l]===null)l++;else if(i[p]===null)p--;else if(d[l]===o[u])a[u]=_(i[l],n[u]),l++,u++;else if(d[p]===o[m])a[m]=_(i[p],n[m]),p--,m--;else if(d[l]===o[m])a[m]=_(i[l],n[m]),P(r,a[m+1],i[l]),l++,m--;else if(d[p]===o[u])a[u]=_(i[p],n[u]),P(r,i[l],i[p]),p--,u++;else if(c===void 0&&(c=De(o,u,m),h=De(d,l,p)),c.has(d[l]))if(c.has(d[p])){let $=h.get(o[u]),Y=$!==void 0?i[$]:null;if(Y===null){let ue=P(r,i[l]);_(ue,n[u]),a[u]=ue}else a[u]=_(Y,n[u]),P(r,i[l],Y),i[$]=null;u++}else K(i[p]),p--;else K(i[l]),l++;for(;u<=m;){let $=P(r,a[m+1]);_($,n[u]),a[u++]=$}for(;l<=p;){let $=i[l++];$!==null&&K($)}return this.ut=o,Oe(r,a),b}});var k=class extends Error{constructor(t,s){super(s);this.status=t}status;name="ApiError"};async function je(r){let e=new URL("api/events",r.baseUrl);for(let[o,d]of Object.entries(r.filters))typeof d=="string"&&d.length>0&&e.searchParams.set(o,d);e.searchParams.set("limit",String(r.limit)),r.cursor!==void 0&&e.searchParams.set("cursor",r.cursor);let t=await fetch(e,{headers:{authorization:`Bearer ${r.token}`,accept:"application/json"},...r.signal?{signal:r.signal}:{}}),s=await nt(t);if(!t.ok){let o=de(s)&&typeof s.error=="string"?s.error:`HTTP ${t.status}`;throw new k(t.status,o)}if(!de(s)||!Array.isArray(s.events))throw new k(t.status,"unexpected answer from the audit service");let i=s.events.filter(ot),n=typeof s.nextCursor=="string"?s.nextCursor:null;return{events:i,nextCursor:n}}async function nt(r){try{return await r.json()}catch{return}}function de(r){return typeof r=="object"&&r!==null&&!Array.isArray(r)}function ot(r){return de(r)&&typeof r.eventId=="string"&&typeof r.occurredAt=="string"&&typeof r.entityType=="string"&&typeof r.entityId=="string"&&typeof r.actorId=="string"&&Array.isArray(r.changes??[])}var at={"&amp;":"&","&lt;":"<","&gt;":">","&quot;":'"',"&#x27;":"'"};function ze(r){return r.replace(/&(?:amp|lt|gt|quot|#x27);/g,e=>at[e]??e)}function G(r){return typeof r=="string"?ze(r):Array.isArray(r)?r.map(G):typeof r=="object"&&r!==null?Object.fromEntries(Object.entries(r).map(([e,t])=>[ze(e),G(t)])):r}function X(r){return JSON.stringify(r,null,2)??"null"}function Be(r){let e=new Date(r);if(Number.isNaN(e.getTime()))return r;let t=s=>String(s).padStart(2,"0");return`${e.getFullYear()}-${t(e.getMonth()+1)}-${t(e.getDate())} ${t(e.getHours())}:${t(e.getMinutes())}:${t(e.getSeconds())}`}function ce(r,e){if(r.length===0)return;let t=new Date(r);if(!Number.isNaN(t.getTime())){if(e){let s=/T\d{2}:\d{2}:\d{2}/.test(r);t.setTime(t.getTime()+(s?999:59999))}return t.toISOString()}}var R=class extends Error{name="TokenProviderError"},lt=15e3,dt=1e3;function ct(r){let e=r.split(".")[1];if(e===void 0)return{};try{let t=e.replace(/-/g,"+").replace(/_/g,"/"),s=JSON.parse(atob(t.padEnd(Math.ceil(t.length/4)*4,"=")));if(typeof s!="object"||s===null)return{};let{iat:i,exp:n}=s;return{...typeof i=="number"?{issuedAt:i}:{},...typeof n=="number"?{expiresAt:n}:{}}}catch{return{}}}function Fe(r){let e=()=>Date.now(),t,s,i,n,o,d=()=>{if(o!==void 0&&clearTimeout(o),o=void 0,i===void 0)return;let h=Math.max(dt,i-e());o=setTimeout(()=>{c().catch(()=>{})},h)},a=(h,l)=>{if(h===t){o!==void 0&&clearTimeout(o),o=void 0;return}t=h;let{issuedAt:p,expiresAt:u}=ct(h);if(u===void 0)s=void 0,i=void 0;else{let m=p!==void 0&&u>p?(u-p)*1e3:u*1e3-l,$=Math.min(lt,Math.max(0,m)/2);s=l+m,i=s-$}d()},c=()=>(n??=(async()=>{let h;try{h=await r()}catch(l){throw new R(l instanceof Error?l.message:String(l))}if(typeof h!="string"||h.trim().length===0)throw new R("the token provider returned no token");return a(h.trim(),e()),h.trim()})().finally(()=>{n=void 0}),n);return{async get(){if(n)return n;if(t!==void 0&&(i===void 0||e()<i))return t;let h=t;try{return await c()}catch(l){let p=s===void 0||e()<s;if(h!==void 0&&p)return h;throw l}},refresh:c,stop(){o!==void 0&&clearTimeout(o),o=void 0}}}var Ve=50,ht=200,ut=["q","actorId","entityType","entityId","action","tenantId"],he=class extends A{static properties={baseUrl:{attribute:"base-url"},pageSize:{attribute:"page-size",type:Number},tokenProvider:{attribute:!1},events:{state:!0},nextCursor:{state:!0},loading:{state:!0},error:{state:!0},open:{state:!0}};filters={};tokens;generation=0;inFlight;observer;observed;constructor(){super(),this.baseUrl="",this.pageSize=Ve,this.tokenProvider=void 0,this.events=[],this.nextCursor=null,this.loading=!1,this.error=void 0,this.open=new Set}connectedCallback(){super.connectedCallback(),this.observer=new IntersectionObserver(e=>{e.some(t=>t.isIntersecting)&&this.loadMore()}),this.tokens&&this.hasUpdated&&this.events.length===0&&this.reload(),this.requestUpdate()}disconnectedCallback(){super.disconnectedCallback(),this.observer?.disconnect(),this.observer=void 0,this.observed=void 0,this.tokens?.stop(),this.inFlight?.abort(),this.loading=!1}willUpdate(e){e.has("tokenProvider")?(this.tokens?.stop(),this.tokens=this.tokenProvider?Fe(this.tokenProvider):void 0,this.reload()):(e.has("baseUrl")||e.has("pageSize"))&&this.hasUpdated&&this.reload()}updated(){let e=this.renderRoot.querySelector(".more")??void 0;this.observer&&(this.observed&&this.observer.unobserve(this.observed),this.observed=e,e&&!this.loading&&this.observer.observe(e))}reload(){this.generation++,this.inFlight?.abort(),this.inFlight=void 0,this.events=[],this.nextCursor=null,this.open=new Set,this.error=void 0,this.loading=!1,this.tokens&&this.fetchPage(void 0)}loadMore=()=>{this.loading||this.error!==void 0||this.nextCursor===null||this.fetchPage(this.nextCursor)};async fetchPage(e){let t=this.tokens;if(!t)return;let s=this.generation,i=new AbortController;this.inFlight=i,this.loading=!0,this.error=void 0;try{let n=c=>je({baseUrl:this.serviceUrl(),token:c,filters:this.filters,limit:this.limit(),...e===void 0?{}:{cursor:e},signal:i.signal}),o;try{o=await n(await t.get())}catch(c){if(!(c instanceof k&&c.status===401)||c.message!=="Token expired")throw c;o=await n(await t.refresh())}if(s!==this.generation)return;let d=new Set(this.events.map(c=>c.eventId)),a=o.events.filter(c=>!d.has(c.eventId)).map(pt);this.events=[...this.events,...a],this.nextCursor=o.nextCursor}catch(n){if(s!==this.generation||i.signal.aborted)return;this.error=ft(n)}finally{s===this.generation&&(this.loading=!1,this.inFlight=void 0)}}serviceUrl(){let e=this.baseUrl.trim()||window.location.origin;return e.endsWith("/")?e:`${e}/`}limit(){let e=Math.trunc(Number(this.pageSize));return Number.isFinite(e)&&e>=1?Math.min(e,ht):Ve}onSubmit=e=>{e.preventDefault();let t=e.currentTarget,s=new FormData(t),i={};for(let d of ut){let a=String(s.get(d)??"").trim();a.length>0&&(i[d]=a)}let n=ce(String(s.get("from")??""),!1),o=ce(String(s.get("to")??""),!0);n&&(i.from=n),o&&(i.to=o),this.filters=i,this.reload()};onReset=()=>{this.filters={},this.reload()};toggle(e){let t=new Set(this.open);t.delete(e)||t.add(e),this.open=t}onRowKey=e=>{let t=[...this.renderRoot.querySelectorAll("button.summary")],s=t.indexOf(e.currentTarget),i=e.key==="ArrowDown"?t[s+1]:e.key==="ArrowUp"?t[s-1]:e.key==="Home"?t[0]:e.key==="End"?t.at(-1):void 0;i&&(e.preventDefault(),i.focus())};retry=()=>{this.events.length===0?this.reload():(this.error=void 0,this.loadMore())};render(){return g`
      <form class="filters" aria-label="Filter events" @submit=${this.onSubmit} @reset=${this.onReset}>
        <label class="search">Search <input type="search" name="q" autocomplete="off" /></label>
        <label>Actor <input name="actorId" autocomplete="off" /></label>
        <label>Entity type <input name="entityType" autocomplete="off" /></label>
        <label>Entity id <input name="entityId" autocomplete="off" /></label>
        <label>Action <input name="action" autocomplete="off" /></label>
        <label>Tenant <input name="tenantId" autocomplete="off" /></label>
        <label>From <input type="datetime-local" name="from" /></label>
        <label>To <input type="datetime-local" name="to" /></label>
        <div class="buttons">
          <button type="submit">Apply</button>
          <button type="reset">Clear</button>
        </div>
      </form>
      ${this.error===void 0?f:g`<div class="error" role="alert">
              <span>${this.error}</span>
              <button type="button" @click=${this.retry}>Try again</button>
            </div>`}
      <p class="status" role="status">${this.statusText()}</p>
      <div
        class=${this.events.length===0?"list empty":"list"}
        aria-busy=${this.loading?"true":"false"}
      >
        ${this.events.length===0?f:g`<div class="head" aria-hidden="true">
                <span>Occurred</span><span>Action</span><span>Actor</span><span>Entity</span
                ><span>Tenant</span>
              </div>`}
        <ul aria-label="Audit events">
          ${Le(this.events,e=>e.eventId,(e,t)=>this.renderRow(e,t))}
        </ul>
        ${this.nextCursor!==null&&this.error===void 0?g`<button type="button" class="more" @click=${this.loadMore}>
                ${this.loading?"Loading\u2026":"Load more"}
              </button>`:f}
      </div>
    `}statusText(){if(!this.tokens)return"Waiting for a frontend token.";let e=this.events.length;if(e===0)return this.loading?"Loading events\u2026":this.error===void 0?"No events match these filters.":"";let t=`${e} ${e===1?"event":"events"}`;return this.loading?`Showing ${t}; loading more\u2026`:this.nextCursor===null?`Showing all ${t}, newest first.`:`Showing ${t}, newest first; scroll for more.`}renderRow(e,t){let s=this.open.has(e.eventId),i=`details-${t}`;return g`<li class="row">
      <button
        type="button"
        class="summary"
        aria-expanded=${s?"true":"false"}
        aria-controls=${s?i:f}
        data-event-id=${e.eventId}
        @click=${()=>this.toggle(e.eventId)}
        @keydown=${this.onRowKey}
      >
        <span class="time"><time datetime=${e.occurredAt}>${Be(e.occurredAt)}</time></span>
        <span class="action">${qe(e)}</span>
        <span class="actor"
          >${e.actorDisplay??e.actorId}
          ${e.actorDisplay===void 0?f:g`<span class="sub">${e.actorId}</span>`}</span
        >
        <span class="entity">${e.entityType} <span class="sub">${e.entityId}</span></span>
        <span class="tenant">${e.tenantId??""}</span>
      </button>
      ${s?this.renderDetails(e,i):f}
    </li>`}renderDetails(e,t){let s=(i,n)=>n===void 0?f:g`<dt>${i}</dt><dd>${n}</dd>`;return g`<section class="details" id=${t} aria-label="Event details">
      <dl>
        ${s("Event id",e.eventId)}
        ${s("Occurred",e.occurredAt)}
        ${s("Received",e.receivedAt)}
        ${s("Action",qe(e))}
        ${s("Description",e.actionDescription)}
        ${s("Actor",`${e.actorDisplay??e.actorId} (${e.actorType} ${e.actorId})`)}
        ${s("Entity",`${e.entityType} ${e.entityId}`)}
        ${s("Tenant",e.tenantId)}
        ${s("Source",e.source)}
      </dl>
      <h3>Changes</h3>
      ${e.changes.length===0?g`<p class="none">No changes recorded.</p>`:g`<table class="diff">
              <thead>
                <tr>
                  <th scope="col">Field</th>
                  <th scope="col" class="op">Op</th>
                  <th scope="col" class="value">Before</th>
                  <th scope="col" class="value">After</th>
                </tr>
              </thead>
              <tbody>
                ${e.changes.map(i=>g`<tr>
                    <th scope="row">
                      <code>${i.path}</code>
                      ${i.redacted?g`<span class="badge">redacted</span>`:f}
                    </th>
                    <td>${i.op}</td>
                    <td><del><pre>${X(i.before)}</pre></del></td>
                    <td><ins><pre>${X(i.after)}</pre></ins></td>
                  </tr>`)}
              </tbody>
            </table>`}
      <h3>Context</h3>
      ${e.context===void 0||Object.keys(e.context).length===0?g`<p class="none">No context.</p>`:g`<pre class="json">${X(e.context)}</pre>`}
    </section>`}static styles=Q`
    :host {
      display: block;
      font: 14px/1.4 system-ui, sans-serif;
      color: #1f2328;
      --accent: var(--audit-log-viewer-accent, #0b5cad);
    }
    .filters {
      display: grid;
      grid-template-columns: repeat(auto-fill, minmax(9.5rem, 1fr));
      gap: 0.5rem 0.75rem;
      align-items: end;
      margin-bottom: 0.75rem;
    }
    .filters label {
      display: flex;
      flex-direction: column;
      font-size: 12px;
      font-weight: 600;
      color: #57606a;
    }
    .filters .search {
      grid-column: 1 / -1;
    }
    input {
      box-sizing: border-box;
      height: 2rem;
      font: inherit;
      padding: 0.3rem 0.4rem;
      border: 1px solid #8c959f;
      border-radius: 4px;
      margin-top: 0.15rem;
    }
    .buttons {
      display: flex;
      gap: 0.5rem;
    }
    .buttons button {
      height: 2rem;
    }
    button {
      font: inherit;
      cursor: pointer;
    }
    .buttons button,
    .error button,
    .more {
      padding: 0.3rem 0.8rem;
      border: 1px solid var(--accent);
      border-radius: 4px;
      background: #fff;
      color: var(--accent);
    }
    .buttons button[type="submit"] {
      background: var(--accent);
      color: #fff;
    }
    :focus-visible {
      outline: 2px solid var(--accent);
      outline-offset: 1px;
    }
    .error {
      display: flex;
      gap: 0.75rem;
      align-items: center;
      justify-content: space-between;
      padding: 0.5rem 0.75rem;
      border: 1px solid #cf222e;
      border-radius: 4px;
      background: #ffebe9;
      color: #82071e;
    }
    .status {
      margin: 0.5rem 0;
      color: #57606a;
    }
    .list {
      max-height: var(--audit-log-viewer-max-height, 32rem);
      overflow-y: auto;
      border: 1px solid #d0d7de;
      border-radius: 4px;
    }
    .list.empty {
      border: 0;
    }
    .status:empty {
      margin: 0;
    }
    ul {
      list-style: none;
      margin: 0;
      padding: 0;
    }
    .head,
    .summary {
      display: grid;
      grid-template-columns: 10.5rem 11rem minmax(8rem, 1.2fr) minmax(8rem, 1fr) 6rem;
      gap: 0.75rem;
      padding: 0.4rem 0.75rem;
      text-align: left;
    }
    .head {
      position: sticky;
      top: 0;
      background: #f6f8fa;
      border-bottom: 1px solid #d0d7de;
      font-size: 12px;
      font-weight: 600;
      color: #57606a;
      z-index: 1;
    }
    .row {
      border-bottom: 1px solid #eaeef2;
    }
    .summary {
      width: 100%;
      border: 0;
      background: none;
      color: inherit;
    }
    .summary:hover {
      background: #f6f8fa;
    }
    .summary[aria-expanded="true"] {
      background: #ddf4ff;
    }
    .summary span {
      overflow-wrap: anywhere;
    }
    .sub {
      display: block;
      font-size: 12px;
      color: #57606a;
    }
    .time {
      font-variant-numeric: tabular-nums;
    }
    .action {
      font-family: ui-monospace, monospace;
      font-size: 13px;
    }
    .details {
      padding: 0.5rem 0.75rem 0.75rem;
      background: #fbfcfd;
      border-top: 1px solid #eaeef2;
    }
    dl {
      display: grid;
      grid-template-columns: max-content 1fr;
      gap: 0.2rem 1rem;
      margin: 0;
    }
    dt {
      font-weight: 600;
      color: #57606a;
    }
    dd {
      margin: 0;
      overflow-wrap: anywhere;
    }
    h3 {
      font-size: 13px;
      margin: 0.75rem 0 0.35rem;
    }
    .diff {
      border-collapse: collapse;
      width: 100%;
    }
    .diff th,
    .diff td {
      border: 1px solid #d0d7de;
      padding: 0.25rem 0.5rem;
      vertical-align: top;
      text-align: left;
    }
    .diff thead th {
      background: #f6f8fa;
      font-size: 12px;
    }
    .diff .op {
      width: 4rem;
    }
    .diff .value {
      width: 37%;
    }
    del,
    ins {
      display: block;
      text-decoration: none;
    }
    del {
      background: #ffebe9;
      color: #82071e;
    }
    ins {
      background: #dafbe1;
      color: #116329;
    }
    pre {
      margin: 0;
      font: 12px/1.45 ui-monospace, monospace;
      white-space: pre-wrap;
      overflow-wrap: anywhere;
    }
    .json {
      padding: 0.5rem;
      background: #f6f8fa;
      border: 1px solid #d0d7de;
      border-radius: 4px;
      max-height: 16rem;
      overflow: auto;
    }
    .badge {
      margin-left: 0.35rem;
      padding: 0 0.35rem;
      border-radius: 3px;
      background: #fff8c5;
      color: #7d4e00;
      font-size: 11px;
    }
    .none {
      margin: 0;
      color: #57606a;
    }
    .more {
      display: block;
      margin: 0.5rem auto;
    }
  `};function qe(r){return r.actionKey??r.action??""}function pt(r){return G(r)}function ft(r){return r instanceof k?r.status===401?`Not authorized: ${r.message}. The page needs a new frontend token.`:r.status===400?`The service refused these filters: ${r.message}`:`The audit service answered ${r.status}: ${r.message}`:r instanceof R?`Could not get a token: ${r.message}`:`Could not reach the audit service: ${r instanceof Error?r.message:String(r)}`}customElements.get("audit-log-viewer")||customElements.define("audit-log-viewer",he);export{he as AuditLogViewer};
/*! Bundled license information:

@lit/reactive-element/css-tag.js:
  (**
   * @license
   * Copyright 2019 Google LLC
   * SPDX-License-Identifier: BSD-3-Clause
   *)

@lit/reactive-element/reactive-element.js:
lit-html/lit-html.js:
lit-element/lit-element.js:
lit-html/directive.js:
lit-html/directives/repeat.js:
  (**
   * @license
   * Copyright 2017 Google LLC
   * SPDX-License-Identifier: BSD-3-Clause
   *)

lit-html/is-server.js:
  (**
   * @license
   * Copyright 2022 Google LLC
   * SPDX-License-Identifier: BSD-3-Clause
   *)

lit-html/directive-helpers.js:
  (**
   * @license
   * Copyright 2020 Google LLC
   * SPDX-License-Identifier: BSD-3-Clause
   *)
*/
